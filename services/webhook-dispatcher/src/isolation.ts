import type { Redis } from "@mailroom/queues";

/**
 * What keeps one endpoint's trouble to itself, besides its slots (slots.ts) and its circuit
 * (circuit.ts):
 *
 * - **A waiting line per endpoint in Redis** (`held`). A job whose endpoint has no slot free and no
 *   place in this process's line ends; its job id goes into the endpoint's sorted set (by when it
 *   arrived) and the delivery row stays due, as it is. Each attempt to the endpoint that finishes
 *   here lets the first one in (its job is queued again): a backlog moves at the endpoint's own
 *   pace and each job of it is fetched and claimed about twice, instead of coming round the queue
 *   every second or so as parked jobs did. Redis is not the truth: a line lost with Redis leaves due
 *   rows without jobs, which the sweeper queues again, as any lost job.
 * - **Attempts that outlast their job** (`detacher`). An attempt whose request has been open for
 *   `afterMs` lets its job finish and goes on in the background (at most `max` at once): a hanging
 *   endpoint then holds its own slots but no worker slot, so it cannot starve the worker however
 *   many endpoints hang at once. The delivery row's claim (a lease of the endpoint's timeout + 15 s)
 *   keeps anyone else from making that attempt; a process that dies meanwhile leaves the lease to
 *   run out and the sweeper to queue the attempt again, as for a job lost with Redis.
 */
export type HeldLines = {
  /** Puts the job in its endpoint's line (the row stays due). */
  hold(endpointId: string, jobId: string): Promise<void>;
  /** The first job id of the endpoint's line, taken out of it; null when this process knows of none. */
  next(endpointId: string): Promise<string | null>;
  /** Forgets the endpoint's line (its deliveries were all queued again). */
  clear(endpointId: string): Promise<void>;
  /** True if the job waits in the endpoint's line (the sweeper leaves it there). */
  has(endpointId: string, jobId: string): Promise<boolean>;
};

export function createHeldLines(redis: Redis, prefix: string): HeldLines {
  const key = (endpointId: string) => `${prefix}:endpoint-held:${endpointId}`;
  /** Endpoints whose line this process put jobs in and has not yet seen empty. */
  const known = new Set<string>();
  return {
    async hold(endpointId, jobId) {
      known.add(endpointId);
      // NX: a job back in line keeps its place.
      await redis.zadd(key(endpointId), "NX", Date.now(), jobId);
    },
    async next(endpointId) {
      if (!known.has(endpointId)) return null;
      const popped = await redis.zpopmin(key(endpointId), 1);
      const jobId = popped[0];
      if (jobId === undefined) known.delete(endpointId);
      return jobId ?? null;
    },
    async clear(endpointId) {
      known.delete(endpointId);
      await redis.del(key(endpointId));
    },
    async has(endpointId, jobId) {
      if ((await redis.zscore(key(endpointId), jobId)) === null) return false;
      // Another process's line: this one lets its jobs in too from now on.
      known.add(endpointId);
      return true;
    },
  };
}

/** What `within` gives back when the attempt goes on without its job. */
export const DETACHED = Symbol("detached");

export type Detacher = {
  /**
   * The attempt's outcome, or DETACHED once its request (`sending`) has been open `afterMs` and
   * fewer than `max` attempts are detached; `later` then gets the outcome.
   */
  within<T>(attempt: Promise<T>, sending: Promise<void>, later: (r: Promise<T>) => void): Promise<T | typeof DETACHED>;
  /** Waits for every detached attempt (close). */
  settled(): Promise<void>;
  readonly count: number;
};

export function createDetacher(opts: { afterMs: number; max: number }): Detacher {
  const detached = new Set<Promise<unknown>>();
  return {
    get count() {
      return detached.size;
    },
    within<T>(attempt: Promise<T>, sending: Promise<void>, later: (r: Promise<T>) => void) {
      let timer: NodeJS.Timeout | undefined;
      let finished = false;
      const late = new Promise<typeof DETACHED>((resolve) => {
        void sending.then(() => {
          if (!finished) timer = setTimeout(() => resolve(DETACHED), opts.afterMs);
        });
      });
      const done = attempt.finally(() => {
        finished = true;
        clearTimeout(timer);
      });
      return Promise.race([done, late]).then((r): T | typeof DETACHED | Promise<T> => {
        if (r !== DETACHED) return r;
        if (detached.size >= opts.max) return done;
        const p = done.then(
          () => undefined,
          () => undefined,
        );
        detached.add(p);
        void p.finally(() => detached.delete(p));
        later(done);
        return DETACHED;
      });
    },
    async settled() {
      await Promise.all(detached);
    },
  };
}
