import type { Transition } from "@mailroom/domain-verification";
import { Counter, type Registry } from "@mailroom/observability";

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
