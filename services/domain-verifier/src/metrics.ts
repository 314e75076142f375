import type { Transition } from "@mailroom/domain-verification";
import { Counter, type Registry } from "@mailroom/observability";
import type { RetentionOptions } from "@mailroom/retention";

/** Scheduled domain checks by what they changed (verified, failed, still pending, inconclusive, …). */
export function domainCheckCounter(registry: Registry): (transition: Transition) => void {
  const checks = new Counter({
    name: "mailroom_domain_checks_total",
    help: "Scheduled domain verification checks by transition",
    labelNames: ["transition"],
    registers: [registry],
  });
  return (transition) => checks.inc({ transition });
}

/** Rows the retention pass deleted, by table of the batch (emails with what hangs off them, block records). */
export function retentionCounter(registry: Registry): NonNullable<RetentionOptions["onBatch"]> {
  const deleted = new Counter({
    name: "mailroom_retention_deleted_total",
    help: "Rows deleted by the retention pass, by table",
    labelNames: ["table"],
    registers: [registry],
  });
  return (table, rows) => deleted.inc({ table }, rows);
}
