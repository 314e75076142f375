import { Redis, type RedisOptions } from "ioredis";

export type RedisRole = "worker" | "producer";

/**
 * Redis connections for BullMQ. Workers block on Redis and must retry forever
 * (`maxRetriesPerRequest: null`); producers sit in request paths (SMTP, HTTP) and must fail fast
 * when Redis is gone (`enableOfflineQueue: false`), so the caller can answer 451 / 503.
 */
export function createRedis(url: string, role: RedisRole, extra: RedisOptions = {}): Redis {
  const base: RedisOptions =
    role === "worker"
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000, commandTimeout: 5_000 };
  return new Redis(url, { ...base, ...extra });
}

/** BullMQ needs noeviction: an evicted job key is a lost message. Returns a warning or null. */
export async function checkEvictionPolicy(redis: Redis): Promise<string | null> {
  try {
    const reply = (await redis.config("GET", "maxmemory-policy")) as string[];
    const policy = reply[1];
    return policy && policy !== "noeviction"
      ? `Redis maxmemory-policy is "${policy}"; it must be "noeviction" or queued jobs can be evicted`
      : null;
  } catch {
    return null; // CONFIG may be disabled on managed Redis
  }
}

export type { Redis };
