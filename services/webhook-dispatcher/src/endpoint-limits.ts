import type { Logger } from "@mailroom/log";
import type { Redis } from "@mailroom/queues";
import { createParking, type Parking } from "./parking.ts";
import { createEndpointSlots, createLocalSlots, type EndpointSlots, type LocalSlots } from "./slots.ts";

export type EndpointLimitOptions = {
  connection: Redis;
  prefix: string;
  logger: Logger;
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
  /** The per-endpoint limit itself; default: the Redis semaphore (tests may pass their own). */
  slots?: EndpointSlots;
};

export type EndpointLimits = { slots: LocalSlots; parking: Parking; pacedSlots: EndpointSlots };

/**
 * The per-endpoint limit as the attempts see it: the Redis semaphore behind the in-process hand-off
 * (slots.ts), and the parking that times each attempt to pace the jobs it sends back (parking.ts).
 *
 * Jobs may wait here for a slot this process is about to hand over only as many as the endpoint
 * serves within half the wait, by its attempt time now (recent average, or the age of the oldest
 * attempt in flight), up to the worker's concurrency once an attempt to it has finished here, and up
 * to the limit before that (the age of its first attempts says nothing yet of how fast it is: an
 * endpoint that hangs from the start gets no line of 40 jobs holding worker slots for a second). A
 * fast endpoint keeps a line of claimed jobs ready for each released slot instead of sending them
 * round the queue; one that hangs gets no line once its attempts in flight are old, so it holds about
 * its in-flight attempts' worker slots. (Trimming a line as its attempts age was tried: under load a
 * fast endpoint's attempts age for a moment too, and the jobs sent away came back as stragglers.)
 */
export function endpointLimits(opts: EndpointLimitOptions): EndpointLimits {
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
    const cap = parking.measured(endpointId) ? opts.concurrency : limit;
    return ms === 0 ? cap : Math.min(cap, Math.floor((limit * maxWaitMs) / (2 * ms)));
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
  return { slots, parking, pacedSlots: paced(slots, parking) };
}

/** The slots, with each attempt that got one timed by the parking. */
function paced(slots: LocalSlots, parking: Parking): EndpointSlots {
  return {
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
}
