import { createHash } from "node:crypto";
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

/**
 * A script run by its SHA (EVALSHA): the script text is not sent, nor hashed by Redis, on every
 * acquire. A Redis that does not know it (restarted, flushed, another cluster node) gets it once.
 */
function script(redis: Redis, text: string) {
  const sha = createHash("sha1").update(text).digest("hex");
  return async (key: string, ...args: (string | number)[]): Promise<unknown> => {
    try {
      return await redis.evalsha(sha, 1, key, ...args);
    } catch (err) {
      if (!(err as Error).message.startsWith("NOSCRIPT")) throw err;
      return redis.eval(text, 1, key, ...args);
    }
  };
}

export function createEndpointSlots(redis: Redis, opts: { prefix: string; limit: number }): RedisEndpointSlots {
  const key = (endpointId: string) => `${opts.prefix}:endpoint-slots:${endpointId}`;
  const acquire = script(redis, ACQUIRE);
  const renew = script(redis, RENEW);
  return {
    async acquire(endpointId, holder, leaseMs) {
      return (await acquire(key(endpointId), opts.limit, Math.ceil(leaseMs), holder)) === 1;
    },
    async release(endpointId, holder) {
      await redis.zrem(key(endpointId), holder);
    },
    async renew(endpointId, member, leaseMs) {
      await renew(key(endpointId), Math.ceil(leaseMs), member);
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
  /** How many more jobs for this endpoint would get a slot or a place to wait here now. */
  room(endpointId: string): number;
  /** Slots of the endpoint this process holds now (attempts in flight here). */
  holding(endpointId: string): number;
};

export type LocalSlotsOptions = {
  limit: number;
  /** Jobs that may wait here per endpoint: a number, or asked per endpoint each time. */
  maxWaiters: number | ((endpointId: string) => number);
  maxWaitMs: number;
  onError?: (err: Error) => void;
};

/** A Redis lease held here: its member name in the sorted set and when it runs out (this clock). */
type Lease = { member: string; expiresAt: number };
/** A job waiting here; release moves the lease into `held` under its holder before waking it. */
type Waiter = { holder: string; wake: (lease: Lease) => void };
type Local = { held: Map<string, Lease>; waiters: Waiter[] };

/** This process's entry per endpoint, dropped once it holds no lease and has no waiter. */
function endpointEntries() {
  const entries = new Map<string, Local>();
  return {
    get: (id: string) => entries.get(id),
    all: () => entries.entries(),
    entry(id: string): Local {
      let l = entries.get(id);
      if (!l) {
        l = { held: new Map(), waiters: [] };
        entries.set(id, l);
      }
      return l;
    },
    forget(id: string, l: Local) {
      if (l.held.size === 0 && l.waiters.length === 0) entries.delete(id);
    },
  };
}

/** Waits in `l`'s line for a lease a release here hands over: the lease, or null when `ms` ran out. */
function waitInLine(l: Local, holder: string, ms: number): Promise<Lease | null> {
  return new Promise((resolve) => {
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
}

/** Gives `lease` to the first job waiting in `l` (false: nobody waits). */
function handOver(l: Local, lease: Lease): boolean {
  const next = l.waiters.shift();
  if (!next) return false;
  l.held.set(next.holder, lease);
  next.wake(lease);
  return true;
}

/** What the steps of an acquire share: the Redis slots, this process's entries and the settings. */
type Ctx = {
  inner: EndpointSlots & Partial<Pick<RedisEndpointSlots, "renew">>;
  locals: ReturnType<typeof endpointEntries>;
  maxWaiters: (endpointId: string) => number;
  maxWaitMs: number;
  onError?: ((err: Error) => void) | undefined;
};

/** A lease from Redis: true if this job holds it now (jobs already waiting here get it first). */
async function fromRedis(c: Ctx, endpointId: string, holder: string, leaseMs: number): Promise<boolean> {
  let ok: boolean;
  try {
    ok = await c.inner.acquire(endpointId, holder, leaseMs);
  } catch (err) {
    const l = c.locals.get(endpointId);
    if (l) c.locals.forget(endpointId, l);
    throw err;
  }
  if (!ok) return false;
  // Looked up again after the round trip: the entry may have been forgotten and made anew
  // meanwhile, and a lease or waiter kept on a forgotten one would never see a release.
  const l = c.locals.entry(endpointId);
  const lease = { member: holder, expiresAt: Date.now() + leaseMs };
  if (handOver(l, lease)) return false; // the first waiter's now; this job joins the line
  l.held.set(holder, lease);
  return true;
}

/** Waits for a slot this process will release (only while it holds some, and the line has room). */
async function waitHere(c: Ctx, endpointId: string, holder: string, leaseMs: number): Promise<boolean> {
  const l = c.locals.entry(endpointId);
  if (l.held.size === 0 || l.waiters.length >= c.maxWaiters(endpointId)) {
    c.locals.forget(endpointId, l);
    return false;
  }
  const lease = await waitInLine(l, holder, c.maxWaitMs);
  if (!lease) {
    c.locals.forget(endpointId, l);
    return false;
  }
  if (c.inner.renew && lease.expiresAt - Date.now() < leaseMs / 2) {
    lease.expiresAt = Date.now() + leaseMs;
    c.inner.renew(endpointId, lease.member, leaseMs).catch((err) => c.onError?.(err as Error));
  }
  return true;
}

export function createLocalSlots(
  inner: EndpointSlots & Partial<Pick<RedisEndpointSlots, "renew">>,
  opts: LocalSlotsOptions,
): LocalSlots {
  const { maxWaiters } = opts;
  const c: Ctx = {
    inner,
    locals: endpointEntries(),
    maxWaiters: typeof maxWaiters === "number" ? () => maxWaiters : maxWaiters,
    maxWaitMs: opts.maxWaitMs,
    onError: opts.onError,
  };
  const full = (id: string, l: Local) => l.held.size >= opts.limit && l.waiters.length >= c.maxWaiters(id);
  return {
    saturated(endpointId) {
      const l = c.locals.get(endpointId);
      return !!l && full(endpointId, l);
    },
    holding: (endpointId) => c.locals.get(endpointId)?.held.size ?? 0,
    room(endpointId) {
      const l = c.locals.get(endpointId);
      const slots = opts.limit - (l?.held.size ?? 0);
      return Math.max(0, slots) + Math.max(0, c.maxWaiters(endpointId) - (l?.waiters.length ?? 0));
    },
    busyEndpoints() {
      const out: string[] = [];
      for (const [id, l] of c.locals.all()) if (full(id, l)) out.push(id);
      return out;
    },
    async acquire(endpointId, holder, leaseMs) {
      // Room under the limit here: ask Redis (other processes may hold the rest).
      const room = c.locals.entry(endpointId).held.size < opts.limit;
      if (room && (await fromRedis(c, endpointId, holder, leaseMs))) return true;
      return waitHere(c, endpointId, holder, leaseMs);
    },
    async release(endpointId, holder) {
      const l = c.locals.get(endpointId);
      const lease = l?.held.get(holder);
      if (!l || !lease) return inner.release(endpointId, holder);
      l.held.delete(holder);
      if (handOver(l, lease)) return;
      c.locals.forget(endpointId, l);
      await inner.release(endpointId, lease.member);
    },
  };
}
