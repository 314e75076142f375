import { Counter, Histogram, type Registry } from "prom-client";
import { LATENCY_BUCKETS } from "./registry.ts";

/** How one delivery attempt ended: the webhook dispatcher's and the outbound sender's alike. */
export type AttemptOutcome = "delivered" | "retrying" | "dead";

export type DeliveryMetrics = {
  /** One attempt that reached its destination (or failed to), with how long it took. */
  attempt(kind: "webhook" | "email", outcome: AttemptOutcome, seconds: number): void;
};

/**
 * Delivery outcomes and attempt latency, the same series for webhook deliveries (dispatcher) and
 * mail sent or forwarded through the relay (outbound sender), so one alert on
 * `mailroom_delivery_attempts_total{outcome="dead"}` covers both. The series of `kinds` start at 0,
 * so the first dead delivery of a process is an increase that alert rules see (a series born at 1
 * is not).
 */
export function createDeliveryMetrics(
  registry: Registry,
  kinds: readonly ("webhook" | "email")[] = [],
): DeliveryMetrics {
  const attempts = new Counter({
    name: "mailroom_delivery_attempts_total",
    help: "Delivery attempts by kind (webhook, email) and outcome (delivered, retrying, dead)",
    labelNames: ["kind", "outcome"],
    registers: [registry],
  });
  const latency = new Histogram({
    name: "mailroom_delivery_attempt_duration_seconds",
    help: "Duration of one delivery attempt, from claiming it to recording its outcome",
    labelNames: ["kind", "outcome"],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  for (const kind of kinds) {
    for (const outcome of ["delivered", "retrying", "dead"]) attempts.inc({ kind, outcome }, 0);
  }
  return {
    attempt(kind, outcome, seconds) {
      attempts.inc({ kind, outcome });
      latency.observe({ kind, outcome }, seconds);
    },
  };
}

/** Seconds since `start` (a process.hrtime.bigint() reading). */
export const secondsSince = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e9;
