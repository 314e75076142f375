import { Counter, type Registry } from "@mailroom/observability";
import type { ProcessResult } from "./process.ts";

export type RuleEngineMetrics = { processed(result: ProcessResult): void };

/**
 * What became of each accepted recipient: stored (delivered to its destinations), blocked by a
 * shield rule, a duplicate, or skipped; and the messages the MIME parser refused (stored raw, with
 * PROCESSING_FAILED verdicts), which deserve a look when they rise.
 */
export function createRuleEngineMetrics(registry: Registry): RuleEngineMetrics {
  const processed = new Counter({
    name: "mailroom_messages_processed_total",
    help: "Recipients processed by the rule engine, by outcome (stored, blocked, duplicate, skipped)",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const parseFailures = new Counter({
    name: "mailroom_parse_failures_total",
    help: "Messages the MIME parser refused or that ran out of processing tries; stored raw",
    registers: [registry],
  });
  for (const outcome of ["stored", "blocked", "duplicate", "skipped"]) processed.inc({ outcome }, 0);
  return {
    processed(r) {
      processed.inc({ outcome: r.outcome });
      if (r.outcome === "stored" && !r.parsed) parseFailures.inc();
    },
  };
}
