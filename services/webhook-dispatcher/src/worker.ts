import { attemptOfJobId, batchedAttemptStore, sweepOverdueDeliveries } from "@mailroom/deliveries";
import { type DeliveryMetrics, dependencyErrors, secondsSince } from "@mailroom/observability";
import type { EventPublisher, Job, MailEvent } from "@mailroom/queues";
import { createWorker, DEFAULT_DRAIN_MS, DelayedError, drainWorker, type Worker } from "@mailroom/queues";
import { startPeriodic } from "@mailroom/runtime";
import { type Circuit, createCircuit, disableLongFailing, dueDeliveries } from "./circuit.ts";
import {
  type AttemptOutcome,
  attemptDelivery,
  type DispatchDeps,
  enqueueAttempt,
  SLOT_LEASE_MARGIN_MS,
} from "./dispatch.ts";
import { type EndpointLimitOptions, endpointLimits } from "./endpoint-limits.ts";
import { createDetacher, createHeldLines, DETACHED, type Detacher, type HeldLines } from "./isolation.ts";
import type { LocalSlots } from "./slots.ts";

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
    /** An attempt whose request is open this long goes on without its job (default 1 s; isolation.ts). */
    detachAfterMs?: number;
    /** Attempts going on without their jobs at most (default 512). */
    maxDetached?: number;
    /** On close, how long running attempts may take before their jobs are handed back (default 30 s). */
    drainMs?: number;
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
  const held = createHeldLines(opts.slotsRedis ?? opts.connection, opts.prefix);
  const detacher = createDetacher({ afterMs: opts.detachAfterMs ?? 1_000, max: opts.maxDetached ?? 512 });
  const line = lineHooks(opts, circuit, held, limits.slots);
  const deps: DispatchDeps = {
    ...opts,
    slots: limits.pacedSlots,
    store,
    circuit,
    onRecovered: line.onRecovered,
    onAttemptDone: line.onAttemptDone,
    ...(events ? { events: events.publish } : {}),
  };
  const x = { held, detacher, slots: limits.slots, circuit, hold: line.hold };
  const worker = createWorker("delivery", deliveryJob(opts, deps, x), {
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
  });
  worker.on("failed", (job, err) => opts.logger.warn({ jobId: job?.id, err: err.message }, "delivery job failed"));
  // Without a listener an "error" (e.g. Redis restarting under a running job) is thrown and kills the process.
  // Rate-limited: while Redis is down every reconnect attempt lands here.
  worker.on("error", (err) => dependencyErrors(opts.logger).report("redis", err, { source: "delivery worker" }));

  const sweeper = startSweeper(opts, held, events?.publish);
  const lines = startLineCheck(opts, held, circuit, line.letIn);
  return {
    worker,
    sweep: sweeper.runOnce,
    async close() {
      // The schedule stops at once; a sweep in flight is awaited once the worker is closed.
      const sweepStopped = sweeper.close();
      await lines.close();
      await drainWorker(worker, opts.drainMs ?? DEFAULT_DRAIN_MS, opts.logger);
      await detacher.settled();
      await sweepStopped;
      await events?.settled();
    },
  };
}

/**
 * The handler of one `delivery` job: one attempt (which may go on after the job, isolation.ts), or
 * the job into its endpoint's line (busy), or moved to when the row is due (early).
 */
function deliveryJob(
  opts: DispatcherOptions,
  deps: DispatchDeps,
  x: { held: HeldLines; detacher: Detacher; slots: LocalSlots; circuit: Circuit; hold: Hold },
) {
  const report = (r: AttemptOutcome, deliveryId: string, jobId: string | undefined, started: bigint) => {
    if (r.outcome === "delivered" || r.outcome === "retrying" || r.outcome === "dead") {
      opts.metrics?.attempt("webhook", r.outcome, secondsSince(started));
    }
    if (r.outcome !== "skipped" || !r.reason.startsWith("stale")) {
      // A dead delivery needs someone to look at it (and maybe replay it): warn.
      opts.logger[r.outcome === "dead" ? "warn" : "info"]({ deliveryId, jobId, ...r }, "delivery attempt");
    }
  };
  return async ({ deliveryId, endpointId }: { deliveryId: string; endpointId?: string | undefined }, job: Job) => {
    if (endpointId) x.held.arrived(endpointId);
    // A job that names its endpoint learns without a claim that it has to wait: the row stays due.
    if (endpointId && x.circuit.isWaiting(endpointId)) return;
    // In the line under `<deliveryId>.<n>` whatever this job's own id.
    const lineId = `${deliveryId}.${attemptOfJobId(job.id) ?? 1}`;
    if (endpointId && x.slots.saturated(endpointId)) return x.hold(endpointId, lineId);
    const started = process.hrtime.bigint();
    let sending = () => {};
    const sent = new Promise<void>((resolve) => {
      sending = resolve;
    });
    const attempt = attemptDelivery(deps, deliveryId, {
      expectedAttempt: attemptOfJobId(job.id),
      holder: `${job.id}:${job.token ?? ""}`,
      onSending: () => sending(),
    });
    const r = await x.detacher.within(attempt, sent, (later) =>
      later.then(
        (outcome) => report(outcome, deliveryId, job.id, started),
        (err) => opts.logger.warn({ deliveryId, jobId: job.id, err: (err as Error).message }, "detached attempt"),
      ),
    );
    // The request is still open: the attempt goes on (its claim's lease covers it), the job is done.
    if (r === DETACHED) return;
    // No slot free nor a place to wait here: the job waits in its endpoint's line, the row stays due.
    if (r.outcome === "busy") return x.hold(r.endpointId, lineId);
    // The row stays due and waits for its endpoint's circuit: this job is done, nothing comes back.
    if (r.outcome === "waiting") return;
    if (r.outcome === "early") {
      await job.moveToDelayed(r.nextAttemptAt.getTime(), job.token);
      // BullMQ's own DelayedError: "the job moved itself to the delayed set", no failure, no attempt used.
      throw new DelayedError(`delivery ${deliveryId}: early`);
    }
    report(r, deliveryId, job.id, started);
  };
}

/** The sweeper (lost jobs) and the turning off of endpoints failing for days; right away too. */
function startSweeper(opts: DispatcherOptions, held: HeldLines, publish: EventPublisher | undefined) {
  return startPeriodic({
    run: async () => {
      await disableLongFailing(opts.prisma, opts.disableAfterMs ?? DISABLE_AFTER_MS, publish);
      return sweepOverdueDeliveries(opts.prisma, { delivery: opts.queue }, opts.logger, {
        graceMs: opts.sweepGraceMs,
        // A job waiting in its endpoint's line is not lost.
        waiting: (endpointId, jobId) => held.has(endpointId, jobId, opts.sweepGraceMs ?? 30_000),
      });
    },
    intervalMs: opts.sweepIntervalMs ?? 30_000,
    onError: (err) => opts.logger.warn({ err: (err as Error).message }, "delivery sweep failed"),
  });
}

/**
 * An endpoint's line moves as its attempts finish (not while its circuit is open: a job let in
 * would only wait again); a closed circuit queues everything that waited.
 */
function lineHooks(opts: DispatcherOptions, circuit: Circuit, held: HeldLines, slots: LocalSlots) {
  const letIn = (endpointId: string) =>
    void letNextIn(opts, held, endpointId, slots.room(endpointId)).catch((err) =>
      opts.logger.warn({ endpointId, err: (err as Error).message }, "endpoint line"),
    );
  return {
    letIn,
    onRecovered: async (endpointId: string) => {
      await held.clear(endpointId);
      await releaseWaiting(opts, endpointId);
    },
    onAttemptDone: (endpointId: string) => {
      if (circuit.isOpen(endpointId)) return;
      letIn(endpointId);
    },
    /**
     * Into the line; if the attempts in flight here when it was decided finished meanwhile (their
     * let-in may have found the line empty), let the first one in at once. With none in flight here
     * (another process holds the slots) that process's attempts let it in.
     */
    hold: async (endpointId: string, jobId: string) => {
      const inFlight = slots.holding(endpointId) > 0;
      await held.hold(endpointId, jobId);
      if (inFlight && slots.holding(endpointId) === 0 && !circuit.isOpen(endpointId)) letIn(endpointId);
    },
  };
}

type Hold = (endpointId: string, jobId: string) => Promise<void>;

/**
 * An attempt to the endpoint finished: as many jobs from the front of its line as the endpoint has
 * room for here (a free slot or a place in the waiting line; at least the one this attempt freed)
 * are queued again. A fast endpoint's line refills its pipeline; a hanging one's lets one in per
 * attempt that ends.
 */
async function letNextIn(opts: DispatcherOptions, held: HeldLines, endpointId: string, room: number): Promise<void> {
  // Jobs already let in and not started yet take their places; the slot this attempt freed is one.
  const jobIds = await held.next(endpointId, Math.max(1, room - held.incoming(endpointId)));
  await Promise.all(
    jobIds.map((jobId) => {
      const n = attemptOfJobId(jobId) ?? 1;
      // To the front: it waited its turn in the line already, not again behind the whole queue.
      return enqueueAttempt(opts.queue, jobId.slice(0, jobId.lastIndexOf(".")), n, new Date(), endpointId, true);
    }),
  );
}

/**
 * A line whose endpoint has no attempt in flight anywhere (its last one finished before a job
 * joined) is let in here; the sweeper's age check is the slower net.
 */
function startLineCheck(opts: DispatcherOptions, held: HeldLines, circuit: Circuit, letIn: (id: string) => void) {
  return startPeriodic({
    run: async () => {
      for (const endpointId of await held.stranded()) if (!circuit.isOpen(endpointId)) letIn(endpointId);
    },
    intervalMs: LINE_CHECK_MS,
    onError: (err) => opts.logger.warn({ err: (err as Error).message }, "endpoint lines check failed"),
  });
}

/** How often this process looks for lines nobody serves (isolation.ts stranded). */
const LINE_CHECK_MS = 1_000;

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
    await Promise.all(page.map((d) => enqueueAttempt(opts.queue, d.id, d.attemptCount + 1, new Date(), endpointId)));
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
