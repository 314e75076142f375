import { attemptOfJobId, enqueueDeliveryAttempt, sweepOverdueDeliveries } from "@mailroom/deliveries";
import { type DeliveryMetrics, dependencyErrors, secondsSince } from "@mailroom/observability";
import {
  createWorker,
  DEFAULT_DRAIN_MS,
  DelayedError,
  drainWorker,
  type Redis,
  type TypedQueue,
  type Worker,
} from "@mailroom/queues";
import { startPeriodic } from "@mailroom/runtime";
import { attemptForward, type ForwardDeps } from "./forward.ts";

export type ForwardWorkerOptions = Omit<ForwardDeps, "requeue"> & {
  /** Queue `forward`: deliveries to email destinations, routed here when they are queued. */
  forwardQueue: TypedQueue<"forward">;
  connection: Redis;
  prefix: string;
  concurrency: number;
  /** How often deliveries to email destinations that lost their job are queued again. */
  sweepIntervalMs: number;
  /** How overdue such a delivery must be before the sweep queues it again (default 30 s). */
  sweepGraceMs?: number;
  /** Attempt outcomes and latency (mailroom_delivery_attempt*); absent: not measured. */
  metrics?: DeliveryMetrics;
};

/**
 * The `forward` worker: one job per attempt of a delivery to an email destination (jobId
 * `<deliveryId>.<n>`), as the webhook dispatcher has for HTTP ones, and the sweep that queues again
 * those whose job was lost (Redis restarted, a crash between commit and enqueue, an endpoint
 * active again after a pause).
 */
export function startForwardWorker(opts: ForwardWorkerOptions): {
  worker: Worker;
  /** Stops fetching; running jobs get `drainMs` to finish, then are handed back (drainWorker). */
  close(drainMs?: number): Promise<void>;
} {
  const queues = { forward: opts.forwardQueue };
  const deps: ForwardDeps = {
    ...opts,
    requeue: (id, n, at) => enqueueDeliveryAttempt(queues, { id, endpointType: "email" }, n, at),
  };
  const worker = createWorker(
    "forward",
    async ({ deliveryId }, job) => {
      const started = process.hrtime.bigint();
      const r = await attemptForward(deps, deliveryId, { expectedAttempt: attemptOfJobId(job.id) });
      if (r.outcome === "delivered" || r.outcome === "retrying" || r.outcome === "dead") {
        opts.metrics?.attempt("email", r.outcome, secondsSince(started));
      } else if (r.outcome === "early") {
        // Not due yet, or another worker holds its lease: run again then (no failure, no job attempt used).
        await job.moveToDelayed(r.nextAttemptAt.getTime(), job.token);
        throw new DelayedError(`forward ${deliveryId}: early`);
      } else opts.logger.debug({ deliveryId, jobId: job.id, ...r }, "forward job: no attempt");
    },
    { connection: opts.connection, prefix: opts.prefix, concurrency: opts.concurrency },
  );
  worker.on("failed", (job, err) => opts.logger.warn({ jobId: job?.id, err: err.message }, "forward job failed"));
  // Rate-limited: while Redis is down every reconnect attempt lands here.
  worker.on("error", (err) => dependencyErrors(opts.logger).report("redis", err, { source: "forward worker" }));
  const sweep = startPeriodic({
    run: () => sweepOverdueDeliveries(opts.prisma, queues, opts.logger, { email: true, graceMs: opts.sweepGraceMs }),
    intervalMs: opts.sweepIntervalMs,
    onError: (err) => opts.logger.warn({ err: (err as Error).message }, "forward sweep failed"),
  });
  return {
    worker,
    async close(drainMs = DEFAULT_DRAIN_MS) {
      await sweep.close();
      await drainWorker(worker, drainMs, opts.logger);
    },
  };
}
