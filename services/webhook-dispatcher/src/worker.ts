import { attemptOfJobId, batchedAttemptStore, sweepOverdueDeliveries } from "@mailroom/deliveries";
import { type DeliveryMetrics, dependencyErrors, secondsSince } from "@mailroom/observability";
import type { EventPublisher, Job, MailEvent } from "@mailroom/queues";
import { createWorker, DelayedError, type Worker } from "@mailroom/queues";
import { startPeriodic } from "@mailroom/runtime";
import { createCircuit, disableLongFailing, dueDeliveries } from "./circuit.ts";
import { attemptDelivery, type DispatchDeps, enqueueAttempt, SLOT_LEASE_MARGIN_MS } from "./dispatch.ts";
import { type EndpointLimitOptions, type EndpointLimits, endpointLimits } from "./endpoint-limits.ts";

export type Dispatcher = { worker: Worker; sweep(): Promise<number>; close(): Promise<void> };

export type DispatcherOptions = DispatchDeps &
  EndpointLimitOptions & {
    /** How often the sweeper looks for due deliveries without a job (default 30 s). */
    sweepIntervalMs?: number;
    /** How overdue a delivery must be before the sweeper re-queues it (default 30 s). */
    sweepGraceMs?: number;
    /** Attempt outcomes and latency (mailroom_delivery_attempt*); absent: not measured. */
    metrics?: DeliveryMetrics;
    /** Failed attempts in a row that open an endpoint's circuit (default 5; circuit.ts). */
    circuitThreshold?: number;
    /** An endpoint failing this long is turned off (default 5 days; circuit.ts disableLongFailing). */
    disableAfterMs?: number;
  };

/** What waited for an endpoint is queued again in pages of this many when its circuit closes. */
const RELEASE_PAGE = 500;

/** The `delivery` worker, the per-endpoint concurrency limit and the sweeper that re-queues lost jobs. */
export function startDispatcher(opts: DispatcherOptions): Dispatcher {
  const limits = endpointLimits(opts);
  const events = trackEvents(opts.events);
  const circuit = createCircuit({
    prisma: opts.prisma,
    unitMs: opts.backoffUnitMs,
    probeLeaseMs: (d) => d.endpoint.timeoutSeconds * 1000 + SLOT_LEASE_MARGIN_MS,
    ...(opts.circuitThreshold !== undefined ? { threshold: opts.circuitThreshold } : {}),
    ...(events ? { events: events.publish } : {}),
  });
  const store = batchedAttemptStore(opts.prisma, {
    leaseMarginMs: SLOT_LEASE_MARGIN_MS,
    // Endpoints with no slot free here, and those whose circuit is open with no probe due: their
    // jobs learn it from the claim statement without a write.
    busyEndpoints: () => [...limits.slots.busyEndpoints(), ...circuit.waiting()],
  });
  const deps: DispatchDeps = {
    ...opts,
    slots: limits.pacedSlots,
    store,
    circuit,
    onRecovered: (endpointId) => releaseWaiting(opts, endpointId),
    ...(events ? { events: events.publish } : {}),
  };
  const worker = createWorker("delivery", deliveryJob(opts, deps, limits), {
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
  });
  worker.on("failed", (job, err) => opts.logger.warn({ jobId: job?.id, err: err.message }, "delivery job failed"));
  // Without a listener an "error" (e.g. Redis restarting under a running job) is thrown and kills the process.
  // Rate-limited: while Redis is down every reconnect attempt lands here.
  worker.on("error", (err) => dependencyErrors(opts.logger).report("redis", err, { source: "delivery worker" }));

  // Right away too: a dispatcher starting after an outage picks up what is overdue.
  const sweeper = startPeriodic({
    run: async () => {
      await disableLongFailing(opts.prisma, opts.disableAfterMs ?? DISABLE_AFTER_MS, events?.publish);
      return sweepOverdueDeliveries(opts.prisma, { delivery: opts.queue }, opts.logger, { graceMs: opts.sweepGraceMs });
    },
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

/** The handler of one `delivery` job: one attempt, or the job parked for later (busy or early). */
function deliveryJob(opts: DispatcherOptions, deps: DispatchDeps, { slots, parking }: EndpointLimits) {
  return async ({ deliveryId }: { deliveryId: string }, job: Job) => {
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
    // The row stays due and waits for its endpoint's circuit: this job is done, nothing comes back.
    if (r.outcome === "waiting") return;
    if (r.outcome === "early") return later(r.nextAttemptAt.getTime(), "early");
    if (r.outcome !== "skipped" || !r.reason.startsWith("stale")) {
      // A dead delivery needs someone to look at it (and maybe replay it): warn.
      opts.logger[r.outcome === "dead" ? "warn" : "info"]({ deliveryId, jobId: job.id, ...r }, "delivery attempt");
    }
  };
}

/** Five days, as Svix waits before it turns a failing endpoint off (ENDPOINT_DISABLE_AFTER_MS). */
const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;

/**
 * An endpoint's circuit closed: its due deliveries, which waited without jobs, are queued again
 * (a page at a time). A crash half way leaves the rest to the sweeper, as any lost job.
 */
async function releaseWaiting(opts: DispatcherOptions, endpointId: string): Promise<void> {
  let after = "";
  for (;;) {
    const page = await dueDeliveries(opts.prisma, endpointId, after, RELEASE_PAGE);
    await Promise.all(page.map((d) => enqueueAttempt(opts.queue, d.id, d.attemptCount + 1, new Date())));
    if (page.length < RELEASE_PAGE) return;
    after = page[page.length - 1]?.id ?? after;
  }
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
