import { type DeliveryMetrics, dependencyErrors, secondsSince } from "@mailroom/observability";
import type { Redis, TypedQueue } from "@mailroom/queues";
import { createWorker, DEFAULT_DRAIN_MS, drainWorker, type EventPublisher, type Worker } from "@mailroom/queues";
import { startPeriodic } from "@mailroom/runtime";
import type { ByteStore } from "@mailroom/storage";
import type { Tracing } from "@mailroom/tracing";
import { startForwardWorker } from "./forward-worker.ts";
import { attemptSend, type SenderDeps } from "./send.ts";
import { sweepOutbound } from "./sweeper.ts";

export type OutboundSender = { worker: Worker; close(): Promise<void> };

/**
 * The `outbound` worker, the sweeper that re-queues mail whose jobs were lost, and the `forward`
 * worker for deliveries to email destinations (forward-worker.ts), on its own queue.
 */
export function startOutboundSender(
  deps: SenderDeps & {
    connection: Redis;
    prefix: string;
    concurrency: number;
    sweepIntervalMs: number;
    /** Queue `forward`: deliveries to email destinations (the rule engine and the API route them here). */
    forwardQueue: TypedQueue<"forward">;
    /** Delivery events of forwarded mail (forward.ts). */
    events?: EventPublisher;
    /** Attempt outcomes and latency (mailroom_delivery_attempt*); absent: not measured. */
    metrics?: DeliveryMetrics;
    /** Raw MIME of forwarded originals (forward.ts; BYTE_STORE). */
    bytes?: ByteStore;
    /** A span per forward attempt (forward.ts); absent: none. */
    tracing?: Tracing;
    /** On close, how long running sends may take before their jobs are handed back (default 30 s). */
    drainMs?: number;
  },
): OutboundSender {
  const worker = createWorker(
    "outbound",
    async ({ emailId }) => {
      const started = process.hrtime.bigint();
      const r = await attemptSend(deps, emailId);
      if (r.outcome !== "skipped") {
        const outcome = r.outcome === "sent" ? "delivered" : r.outcome === "failed" ? "dead" : "retrying";
        deps.metrics?.attempt("email", outcome, secondsSince(started));
      }
      if (r.outcome === "skipped") deps.logger.debug({ emailId, reason: r.reason }, "outbound job skipped");
    },
    { connection: deps.connection, prefix: deps.prefix, concurrency: deps.concurrency },
  );
  worker.on("failed", (job, err) => deps.logger.warn({ jobId: job?.id, err: err.message }, "outbound job failed"));
  // Rate-limited: while Redis is down every reconnect attempt lands here.
  worker.on("error", (err) => dependencyErrors(deps.logger).report("redis", err, { source: "outbound worker" }));
  // First pass one interval after start, as before; one pass at a time.
  const sweeper = startPeriodic({
    run: () => sweepOutbound(deps.prisma, deps.queue, deps.logger),
    intervalMs: deps.sweepIntervalMs,
    runAtStart: false,
    onError: (err) => deps.logger.warn({ err: (err as Error).message }, "outbound sweep failed"),
  });
  const forwarder = startForwardWorker(deps);
  return {
    worker,
    async close() {
      const drainMs = deps.drainMs ?? DEFAULT_DRAIN_MS;
      await Promise.all([sweeper.close(), drainWorker(worker, drainMs, deps.logger), forwarder.close(drainMs)]);
    },
  };
}
