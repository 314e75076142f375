import { attemptOfJobId, batchedAttemptStore, sweepOverdueDeliveries } from "@mailroom/deliveries";
import { type DeliveryMetrics, dependencyErrors, secondsSince } from "@mailroom/observability";
import type { EventPublisher, MailEvent, Redis } from "@mailroom/queues";
import { createWorker, DelayedError, type Worker } from "@mailroom/queues";
import { startPeriodic } from "@mailroom/runtime";
import { attemptDelivery, type DispatchDeps, SLOT_LEASE_MARGIN_MS } from "./dispatch.ts";
import { createParking } from "./parking.ts";
import { createEndpointSlots, createLocalSlots, type EndpointSlots } from "./slots.ts";

export type Dispatcher = { worker: Worker; sweep(): Promise<number>; close(): Promise<void> };

export type DispatcherOptions = DispatchDeps & {
  connection: Redis;
  prefix: string;
  /** Attempts in flight in this process. */
  concurrency: number;
  /** Attempts in flight to one endpoint, across every dispatcher process (default 4). */
  endpointConcurrency?: number;
  /**
   * How long a job waits before asking again for a slot of a busy endpoint: this (default 1 s,
   * jittered to 0.5–1×), longer when a line of jobs for the endpoint is parked ahead of it (parking.ts).
   */
  busyRetryMs?: number;
  /** The longest a job parked for a busy endpoint waits before asking again (default 30 s). */
  busyRetryMaxMs?: number;
  /**
   * How long a job may wait in its worker slot for a slot of its endpoint that this process is
   * about to release (default 1 s); how many may wait: endpointLimits below.
   */
  endpointWaitMs?: number;
  /** Redis connection for the endpoint slots; default: `connection`. */
  slotsRedis?: Redis;
  /** How often the sweeper looks for due deliveries without a job (default 30 s). */
  sweepIntervalMs?: number;
  /** How overdue a delivery must be before the sweeper re-queues it (default 30 s). */
  sweepGraceMs?: number;
  /** Attempt outcomes and latency (mailroom_delivery_attempt*); absent: not measured. */
  metrics?: DeliveryMetrics;
};

/**
 * The per-endpoint limit as the attempts see it: the Redis semaphore behind the in-process hand-off
 * (slots.ts), and the parking that times each attempt to pace the jobs it sends back (parking.ts).
 *
 * Jobs may wait here for a slot this process is about to hand over only as many as the endpoint
 * serves within half the wait, by its attempt time now: a fast endpoint keeps a line of claimed jobs
 * ready for each released slot (up to the worker's concurrency) instead of sending them round the
 * queue, and one that hangs gets none (its jobs park at once), so it cannot hold worker slots beyond
 * the attempts it has in flight. Before any attempt was timed: `limit` waiters, as before.
 */
function endpointLimits(opts: DispatcherOptions) {
  const limit = opts.endpointConcurrency ?? 4;
  const maxWaitMs = opts.endpointWaitMs ?? 1_000;
  const busyRetryMs = opts.busyRetryMs ?? 1_000;
  const parking = createParking({
    slots: limit,
    minMs: busyRetryMs,
    maxMs: Math.max(busyRetryMs, opts.busyRetryMaxMs ?? 30_000),
  });
  const maxWaiters = (endpointId: string) => {
    const ms = parking.attemptMs(endpointId);
    return ms === 0 ? limit : Math.min(opts.concurrency, Math.floor((limit * maxWaitMs) / (2 * ms)));
  };
  const slots = createLocalSlots(
    opts.slots ?? createEndpointSlots(opts.slotsRedis ?? opts.connection, { prefix: opts.prefix, limit }),
    {
      limit,
      maxWaiters,
      maxWaitMs,
      onError: (err) => opts.logger.warn({ err: err.message }, "renewing an endpoint slot failed"),
    },
  );
  const pacedSlots: EndpointSlots = {
    async acquire(endpointId, holder, leaseMs) {
      const ok = await slots.acquire(endpointId, holder, leaseMs);
      if (ok) parking.started(endpointId, holder);
      return ok;
    },
    release(endpointId, holder) {
      parking.finished(endpointId, holder);
      return slots.release(endpointId, holder);
    },
    busyEndpoints: () => slots.busyEndpoints(),
  };
  return { slots, parking, pacedSlots };
}

/** The `delivery` worker, the per-endpoint concurrency limit and the sweeper that re-queues lost jobs. */
export function startDispatcher(opts: DispatcherOptions): Dispatcher {
  const { slots, parking, pacedSlots } = endpointLimits(opts);
  const store = batchedAttemptStore(opts.prisma, {
    leaseMarginMs: SLOT_LEASE_MARGIN_MS,
    busyEndpoints: () => slots.busyEndpoints(),
  });
  const events = trackEvents(opts.events);
  const deps: DispatchDeps = { ...opts, slots: pacedSlots, store, ...(events ? { events: events.publish } : {}) };
  const worker = createWorker(
    "delivery",
    async ({ deliveryId }, job) => {
      // Give the worker slot back instead of waiting in it: that is what keeps one slow endpoint
      // from occupying every slot. Jitter spreads the waiting jobs out.
      const later = async (at: number, why: string): Promise<never> => {
        await job.moveToDelayed(at, job.token);
        // BullMQ's own DelayedError: "the job moved itself to the delayed set", no failure, no attempt used.
        throw new DelayedError(`delivery ${deliveryId}: ${why}`);
      };
      const park = (endpointId: string) => later(Date.now() + parking.park(deliveryId, endpointId), "busy");
      // Parked before and its endpoint still has neither a slot nor a place to wait here: park again
      // without claiming it.
      const known = parking.take(deliveryId);
      if (known && slots.saturated(known)) return park(known);
      const started = process.hrtime.bigint();
      const r = await attemptDelivery(deps, deliveryId, {
        expectedAttempt: attemptOfJobId(job.id),
        holder: `${job.id}:${job.token ?? ""}`,
      });
      if (r.outcome === "delivered" || r.outcome === "retrying" || r.outcome === "dead") {
        opts.metrics?.attempt("webhook", r.outcome, secondsSince(started));
      }
      if (r.outcome === "busy") return park(r.endpointId);
      if (r.outcome === "early") return later(r.nextAttemptAt.getTime(), "early");
      if (r.outcome !== "skipped" || !r.reason.startsWith("stale")) {
        // A dead delivery needs someone to look at it (and maybe replay it): warn.
        opts.logger[r.outcome === "dead" ? "warn" : "info"]({ deliveryId, jobId: job.id, ...r }, "delivery attempt");
      }
    },
    { connection: opts.connection, prefix: opts.prefix, concurrency: opts.concurrency },
  );
  worker.on("failed", (job, err) => opts.logger.warn({ jobId: job?.id, err: err.message }, "delivery job failed"));
  // Without a listener an "error" (e.g. Redis restarting under a running job) is thrown and kills the process.
  // Rate-limited: while Redis is down every reconnect attempt lands here.
  worker.on("error", (err) => dependencyErrors(opts.logger).report("redis", err, { source: "delivery worker" }));

  // Right away too: a dispatcher starting after an outage picks up what is overdue.
  const sweeper = startPeriodic({
    run: () =>
      sweepOverdueDeliveries(opts.prisma, { delivery: opts.queue }, opts.logger, { graceMs: opts.sweepGraceMs }),
    intervalMs: opts.sweepIntervalMs ?? 30_000,
    onError: (err) => opts.logger.warn({ err: (err as Error).message }, "delivery sweep failed"),
  });
  return {
    worker,
    sweep: sweeper.runOnce,
    async close() {
      // The schedule stops at once; a sweep in flight is awaited once the worker is closed.
      const sweepStopped = sweeper.close();
      await worker.close();
      await sweepStopped;
      await events?.settled();
    },
  };
}

/**
 * Live events published without holding up the job: the outcome is committed before the event goes
 * out, and the publisher logs and swallows its own failures, so waiting for Redis's answer only kept
 * a worker slot (one more round trip per final outcome). close() waits for those still on the way.
 */
function trackEvents(publish: EventPublisher | undefined) {
  if (!publish) return undefined;
  const pending = new Set<Promise<void>>();
  return {
    publish: async (event: MailEvent) => {
      const p = publish(event).finally(() => pending.delete(p));
      pending.add(p);
    },
    settled: () => Promise.all(pending).then(() => undefined),
  };
}
