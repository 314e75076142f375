import type { Redis } from "@mailroom/queues";

/**
 * A per-endpoint counting semaphore in Redis, shared by every dispatcher process: at most `limit`
 * attempts to one endpoint are in flight, so a slow endpoint holds a few slots and the worker's
 * other slots keep serving everyone else. Each holder is a lease (sorted-set score = expiry, by
 * Redis's clock), so a worker that dies mid-attempt frees its slot when the lease runs out.
 */
export type EndpointSlots = {
  acquire(endpointId: string, holder: string, leaseMs: number): Promise<boolean>;
  release(endpointId: string, holder: string): Promise<void>;
  /** Endpoints an acquire would refuse at once without asking anyone (see LocalSlots.saturated). */
  busyEndpoints?(): string[];
};

/** The Redis semaphore also renews a lease that changed hands in one process (createLocalSlots). */
export type RedisEndpointSlots = EndpointSlots & {
  renew(endpointId: string, member: string, leaseMs: number): Promise<void>;
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

/** Renews a lease that is still held; one that ran out stays gone (its slot may be someone else's now). */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1
`;

export function createEndpointSlots(redis: Redis, opts: { prefix: string; limit: number }): RedisEndpointSlots {
  const key = (endpointId: string) => `${opts.prefix}:endpoint-slots:${endpointId}`;
  return {
    async acquire(endpointId, holder, leaseMs) {
      const r = await redis.eval(ACQUIRE, 1, key(endpointId), opts.limit, Math.ceil(leaseMs), holder);
      return r === 1;
    },
    async release(endpointId, holder) {
      await redis.zrem(key(endpointId), holder);
    },
    async renew(endpointId, member, leaseMs) {
      await redis.eval(RENEW, 1, key(endpointId), Math.ceil(leaseMs), member);
    },
  };
}

/**
 * In front of the Redis slots: a job that finds its endpoint busy while this process holds some of
 * that endpoint's slots waits here (at most `maxWaiters` jobs per endpoint, each at most `maxWaitMs`)
 * instead of going back to the queue and being claimed again a second later. A released slot is
 * handed straight to the first waiter — the Redis lease changes hands without a round trip — and
 * goes back to Redis only when nobody here waits for it. The Redis semaphore stays the authority
 * across processes: every slot in use is one of its leases.
 *
 * A handed-over lease is renewed (not awaited) once less than half of it is left: the renewal lands
 * long before the lease could run out. Should it fail (Redis away), a long attempt may outlive the
 * lease and another process may run one attempt above the limit for a while; no delivery is affected.
 */
export type LocalSlots = Required<EndpointSlots> & {
  /** True when a job for this endpoint would neither get a slot nor a place to wait here. */
  saturated(endpointId: string): boolean;
};

/** A Redis lease held here: its member name in the sorted set and when it runs out (this clock). */
type Lease = { member: string; expiresAt: number };
/** A job waiting here; release moves the lease into `held` under its holder before waking it. */
type Waiter = { holder: string; wake: (lease: Lease) => void };
type Local = { held: Map<string, Lease>; waiters: Waiter[] };

export function createLocalSlots(
  inner: EndpointSlots & Partial<Pick<RedisEndpointSlots, "renew">>,
  opts: {
    limit: number;
    /** Jobs that may wait here per endpoint: a number, or asked per endpoint each time. */
    maxWaiters: number | ((endpointId: string) => number);
    maxWaitMs: number;
    onError?: (err: Error) => void;
  },
): LocalSlots {
  const maxWaiters = typeof opts.maxWaiters === "number" ? () => opts.maxWaiters as number : opts.maxWaiters;
  const locals = new Map<string, Local>();
  const local = (id: string): Local => {
    let l = locals.get(id);
    if (!l) {
      l = { held: new Map(), waiters: [] };
      locals.set(id, l);
    }
    return l;
  };
  const full = (id: string, l: Local) => l.held.size >= opts.limit && l.waiters.length >= maxWaiters(id);
  const forget = (id: string, l: Local) => {
    if (l.held.size === 0 && l.waiters.length === 0) locals.delete(id);
  };
  /** The handed-over lease, or null when the wait ran out. */
  const wait = (l: Local, holder: string, ms: number) =>
    new Promise<Lease | null>((resolve) => {
      const waiter: Waiter = {
        holder,
        wake: (lease) => {
          clearTimeout(timer);
          resolve(lease);
        },
      };
      const timer = setTimeout(() => {
        const i = l.waiters.indexOf(waiter);
        if (i >= 0) l.waiters.splice(i, 1);
        resolve(null);
      }, ms);
      l.waiters.push(waiter);
    });

  return {
    saturated(endpointId) {
      const l = locals.get(endpointId);
      return !!l && full(endpointId, l);
    },
    busyEndpoints() {
      const out: string[] = [];
      for (const [id, l] of locals) if (full(id, l)) out.push(id);
      return out;
    },
    async acquire(endpointId, holder, leaseMs) {
      // Room under the limit here: ask Redis (other processes may hold the rest).
      if (local(endpointId).held.size < opts.limit) {
        let ok: boolean;
        try {
          ok = await inner.acquire(endpointId, holder, leaseMs);
        } catch (err) {
          const l = locals.get(endpointId);
          if (l) forget(endpointId, l);
          throw err;
        }
        if (ok) {
          // Looked up again after the round trip: the entry may have been forgotten and made anew
          // meanwhile, and a lease or waiter kept on a forgotten one would never see a release.
          const l = local(endpointId);
          const lease = { member: holder, expiresAt: Date.now() + leaseMs };
          const first = l.waiters.shift();
          if (!first) {
            l.held.set(holder, lease);
            return true;
          }
          // Jobs already waiting here go first: the new lease is the first one's, this job joins the line.
          l.held.set(first.holder, lease);
          first.wake(lease);
        }
      }
      // Wait only for a slot this process will release.
      const l = local(endpointId);
      if (l.held.size === 0 || l.waiters.length >= maxWaiters(endpointId)) {
        forget(endpointId, l);
        return false;
      }
      const lease = await wait(l, holder, opts.maxWaitMs);
      if (!lease) {
        forget(endpointId, l);
        return false;
      }
      if (inner.renew && lease.expiresAt - Date.now() < leaseMs / 2) {
        lease.expiresAt = Date.now() + leaseMs;
        inner.renew(endpointId, lease.member, leaseMs).catch((err) => opts.onError?.(err as Error));
      }
      return true;
    },
    async release(endpointId, holder) {
      const l = locals.get(endpointId);
      const lease = l?.held.get(holder);
      if (!l || !lease) return inner.release(endpointId, holder);
      l.held.delete(holder);
      const next = l.waiters.shift();
      if (next) {
        l.held.set(next.holder, lease);
        next.wake(lease);
        return;
      }
      forget(endpointId, l);
      await inner.release(endpointId, lease.member);
    },
  };
}
