import { Counter, Histogram, type Registry } from "@mailroom/observability";
import type { ProcessResult } from "./process.ts";

export type RuleEngineMetrics = {
  /** One recipient processed to an outcome, in `seconds` (the whole job: load, parse, verdicts, rules, store). */
  processed(result: ProcessResult, seconds: number): void;
  /** A try that threw (it is retried with backoff, or stored as PROCESSING_FAILED once out of tries). */
  failed(seconds: number): void;
};

/** Seconds: a small text message is stored in milliseconds, a 25 MB one with DNS lookups in seconds. */
const PROCESSING_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * What became of each accepted recipient: stored (delivered to its destinations), blocked by a
 * shield rule, a duplicate, or skipped; and the messages the MIME parser refused (stored raw, with
 * PROCESSING_FAILED verdicts), which deserve a look when they rise; and how long each took, by the
 * same outcome (`failed`: the try threw and the job is retried).
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
  const duration = new Histogram({
    name: "mailroom_message_processing_seconds",
    help: "Time the rule engine took per recipient (one inbound job), by outcome (stored, blocked, duplicate, skipped, failed)",
    labelNames: ["outcome"],
    buckets: PROCESSING_BUCKETS,
    registers: [registry],
  });
  for (const outcome of ["stored", "blocked", "duplicate", "skipped"]) processed.inc({ outcome }, 0);
  return {
    processed(r, seconds) {
      processed.inc({ outcome: r.outcome });
      duration.observe({ outcome: r.outcome }, seconds);
      if (r.outcome === "stored" && !r.parsed) parseFailures.inc();
    },
    failed(seconds) {
      duration.observe({ outcome: "failed" }, seconds);
    },
  };
}
