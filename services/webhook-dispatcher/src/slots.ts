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
