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
  /**
   * Up to `count` job ids from the front of the endpoint's line, taken out of it. Asked after every
   * attempt (one `ZPOPMIN`): any process's line, whoever filled it.
   */
  next(endpointId: string, count: number): Promise<string[]>;
  /** Forgets the endpoint's line (its deliveries were all queued again). */
  clear(endpointId: string): Promise<void>;
  /**
   * True if the job joined the endpoint's line less than `maxAgeMs` ago (the sweeper leaves it
   * there); an older one may be stranded (no attempt left anywhere to let it in) and is queued again.
   */
  has(endpointId: string, jobId: string, maxAgeMs: number): Promise<boolean>;
  /**
   * Endpoints whose line has jobs while none of the endpoint's slots is held by anyone (every
   * replica's attempts finished, so nobody will let them in): for a periodic look.
   */
  stranded(): Promise<string[]>;
  /**
   * Jobs this process let in from the endpoint's line in the last second that have not started here
   * (another process may have taken them: after a second they no longer count).
   */
  incoming(endpointId: string): number;
  /** A job of the endpoint started here (one fewer incoming). */
  arrived(endpointId: string): void;
};

/** How long a job let in from a line counts as on its way here. */
const INCOMING_MS = 1_000;

export function createHeldLines(redis: Redis, prefix: string): HeldLines {
  const key = (endpointId: string) => `${prefix}:endpoint-held:${endpointId}`;
  /** When each job let in from an endpoint's line was let in (ms), oldest first. */
  const coming = new Map<string, number[]>();
  const recent = (endpointId: string) => {
    const times = coming.get(endpointId);
    if (!times) return [];
    const since = Date.now() - INCOMING_MS;
    while (times.length > 0 && (times[0] as number) < since) times.shift();
    if (times.length === 0) coming.delete(endpointId);
    return times;
  };
  return {
    incoming: (endpointId) => recent(endpointId).length,
    arrived(endpointId) {
      recent(endpointId).shift();
    },
    async hold(endpointId, jobId) {
      await redis.sadd(`${prefix}:endpoint-lines`, endpointId);
      // Scored by when it (last) joined: the sweeper tells a stranded one by its age.
      await redis.zadd(key(endpointId), Date.now(), jobId);
    },
    async next(endpointId, count) {
      // [member, score, member, score, …]
      const popped = (await redis.zpopmin(key(endpointId), count)).filter((_, i) => i % 2 === 0);
      if (popped.length > 0) coming.set(endpointId, [...recent(endpointId), ...popped.map(() => Date.now())]);
      return popped;
    },
    async clear(endpointId) {
      await redis.del(key(endpointId));
    },
    async stranded() {
      const out: string[] = [];
      for (const id of await redis.smembers(`${prefix}:endpoint-lines`)) {
        if ((await redis.zcard(key(id))) === 0) {
          await redis.srem(`${prefix}:endpoint-lines`, id);
          continue;
        }
        const busy = await redis.zcount(`${prefix}:endpoint-slots:${id}`, Date.now(), "+inf");
        if (busy === 0) out.push(id);
      }
      return out;
    },
    async has(endpointId, jobId, maxAgeMs) {
      const since = await redis.zscore(key(endpointId), jobId);
      return since !== null && Number(since) >= Date.now() - maxAgeMs;
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
