import type { Redis } from "ioredis";

/**
 * A per-endpoint counting semaphore in Redis, shared by every dispatcher process: at most `limit`
 * attempts to one endpoint are in flight, so a slow endpoint holds a few slots and the worker's
 * other slots keep serving everyone else. Each holder is a lease (sorted-set score = expiry, by
 * Redis's clock), so a worker that dies mid-attempt frees its slot when the lease runs out.
 */
export type EndpointSlots = {
  acquire(endpointId: string, holder: string, leaseMs: number): Promise<boolean>;
  release(endpointId: string, holder: string): Promise<void>;
};

const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
`;

export function createEndpointSlots(redis: Redis, opts: { prefix: string; limit: number }): EndpointSlots {
  const key = (endpointId: string) => `${opts.prefix}:endpoint-slots:${endpointId}`;
  return {
    async acquire(endpointId, holder, leaseMs) {
      const r = await redis.eval(ACQUIRE, 1, key(endpointId), opts.limit, Math.ceil(leaseMs), holder);
      return r === 1;
    },
    async release(endpointId, holder) {
      await redis.zrem(key(endpointId), holder);
    },
  };
}

/**
 * In front of the Redis slots: a job that finds its endpoint busy while this process holds some of
 * that endpoint's slots waits here for one of them to be released (at most `maxWaiters` jobs per
 * endpoint, each at most `maxWaitMs`), instead of going back to the queue and being loaded again
 * a second later. Waiters are served in order; a newcomer queues behind them rather than barging.
 * The Redis semaphore stays the authority across processes: a woken waiter still asks it.
 */
export type LocalSlots = EndpointSlots & {
  /** True when a job for this endpoint would neither get a slot nor a place to wait here. */
  saturated(endpointId: string): boolean;
};

type Local = { inFlight: number; waiters: (() => void)[] };

export function createLocalSlots(
  inner: EndpointSlots,
  opts: { limit: number; maxWaiters: number; maxWaitMs: number },
): LocalSlots {
  const locals = new Map<string, Local>();
  const local = (id: string): Local => {
    let l = locals.get(id);
    if (!l) {
      l = { inFlight: 0, waiters: [] };
      locals.set(id, l);
    }
    return l;
  };
  const forget = (id: string, l: Local) => {
    if (l.inFlight === 0 && l.waiters.length === 0) locals.delete(id);
  };
  /** Resolves true when woken by a release, false when the wait ran out. */
  const wait = (l: Local, ms: number) =>
    new Promise<boolean>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const i = l.waiters.indexOf(wake);
        if (i >= 0) l.waiters.splice(i, 1);
        resolve(false);
      }, ms);
      l.waiters.push(wake);
    });

  return {
    saturated(endpointId) {
      const l = locals.get(endpointId);
      return !!l && l.inFlight >= opts.limit && l.waiters.length >= opts.maxWaiters;
    },
    async acquire(endpointId, holder, leaseMs) {
      const l = local(endpointId);
      const deadline = Date.now() + opts.maxWaitMs;
      // Behind earlier waiters, or at the limit already: wait for a release from this process.
      let mustWait = l.waiters.length > 0 || l.inFlight >= opts.limit;
      for (;;) {
        if (mustWait) {
          const left = deadline - Date.now();
          if (l.inFlight === 0 || l.waiters.length >= opts.maxWaiters || left <= 0 || !(await wait(l, left))) {
            forget(endpointId, l);
            return false;
          }
        }
        let ok = false;
        try {
          ok = await inner.acquire(endpointId, holder, leaseMs);
        } catch (err) {
          l.waiters.shift()?.(); // pass the turn on
          forget(endpointId, l);
          throw err;
        }
        if (ok) {
          l.inFlight++;
          return true;
        }
        // Busy in Redis: another process holds the rest. Wait only if a release here is coming.
        mustWait = true;
      }
    },
    async release(endpointId, holder) {
      try {
        await inner.release(endpointId, holder);
      } finally {
        const l = locals.get(endpointId);
        if (l) {
          l.inFlight = Math.max(0, l.inFlight - 1);
          l.waiters.shift()?.();
          forget(endpointId, l);
        }
      }
    },
  };
}
