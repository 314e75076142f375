import { AppError } from "@mailroom/core";
import type { Logger } from "@mailroom/log";
import type { Redis } from "@mailroom/queues";
import type { RequestHandler } from "express";
import { redisReady } from "./redis-ready.ts";

export type RateLimitConfig = {
  /** Requests per window per API key; 0 turns rate limiting off. */
  limit: number;
  /**
   * Sliding window: this window's count plus the previous window's, weighted by how much of it the
   * sliding window still overlaps (no burst of twice the limit across a boundary).
   */
  windowSeconds: number;
  /** Redis key prefix (one per deployment; tests use their own). */
  prefix: string;
  /** How long a request waits for a (re)connecting Redis before it counts as down (default 2 s). */
  readyWaitMs?: number;
};

export type RateDecision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

// The script reads Redis's clock, so every API replica agrees on the window boundaries.
// Returns { count in the current window, count in the previous window, ms elapsed in the window }.
const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local w = tonumber(ARGV[1])
local idx = math.floor(now / w)
local elapsed = now - idx * w
local cur_key = KEYS[1] .. ':' .. idx
local prev = tonumber(redis.call('GET', KEYS[1] .. ':' .. (idx - 1)) or '0')
local cur = tonumber(redis.call('GET', cur_key) or '0')
local limit = tonumber(ARGV[2])
local used = cur + prev * (w - elapsed) / w
if used < limit then
  cur = redis.call('INCR', cur_key)
  redis.call('PEXPIRE', cur_key, w * 2)
  return {1, cur, prev, elapsed}
end
return {0, cur, prev, elapsed}
`;

/** Decides one request of `keyId`, counting it when allowed. */
export async function consume(redis: Redis, config: RateLimitConfig, keyId: string): Promise<RateDecision> {
  const w = config.windowSeconds * 1000;
  const [ok, cur, prev, elapsed] = (await redis.eval(
    SCRIPT,
    1,
    // The script derives each window's key from this one; the hash tag keeps them in one cluster slot.
    `${config.prefix}:ratelimit:{${keyId}}`,
    String(w),
    String(config.limit),
  )) as [number, number, number, number];
  const left = w - elapsed;
  const used = cur + (prev * left) / w;
  let resetMs = left;
  if (!ok) {
    // When will the weighted count fall below the limit?
    resetMs =
      cur < config.limit && prev > 0
        ? Math.max(0, left - (w * (config.limit - cur)) / prev)
        : left + Math.max(0, w - (w * config.limit) / Math.max(cur, 1));
  }
  return {
    allowed: ok === 1,
    limit: config.limit,
    remaining: Math.max(0, Math.floor(config.limit - used)),
    resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
  };
}

const READY_WAIT_MS = 2_000;
/** While Redis is down, one warning per this interval (not one per request). */
const WARN_EVERY_MS = 10_000;

/**
 * Per API key, after authentication. Every response carries RateLimit-Limit/-Remaining/-Reset; a
 * refused request gets 429 with Retry-After. A request never passes uncounted because the
 * connection is still starting: it waits (up to READY_WAIT_MS) for Redis to be ready. If Redis is
 * really unreachable (docs/decisions.md, issue 12): reads (GET/HEAD) go through uncounted and it is
 * logged — a Redis outage must not take reading mail down; every write (MCP calls included, all
 * POSTs) gets 503 with Retry-After and is not performed, as SMTP answers 451: writes are where an
 * unlimited key costs (outbound mail, endpoint tests, fan-out) and most of them need Redis anyway.
 */
export function rateLimitMiddleware(redis: Redis, config: RateLimitConfig, logger: Logger): RequestHandler {
  let lastWarn = 0;
  return async (req, res, next) => {
    if (config.limit <= 0 || !req.auth) return next();
    let d: RateDecision;
    try {
      if (!(await redisReady(redis, config.readyWaitMs ?? READY_WAIT_MS))) throw new Error(`redis ${redis.status}`);
      d = await consume(redis, config, req.auth.keyId);
    } catch (err) {
      const read = req.method === "GET" || req.method === "HEAD";
      if (Date.now() - lastWarn >= WARN_EVERY_MS) {
        lastWarn = Date.now();
        logger.warn(
          { err: (err as Error).message },
          "rate limiter unavailable: reads pass uncounted, writes answered 503",
        );
      }
      if (read) return next();
      throw new AppError("unavailable", "Rate limiter unavailable; the request was not performed, retry shortly", {
        "Retry-After": "5",
      });
    }
    res.setHeader("RateLimit-Limit", String(d.limit));
    res.setHeader("RateLimit-Remaining", String(d.remaining));
    res.setHeader("RateLimit-Reset", String(d.resetSeconds));
    if (!d.allowed) {
      throw new AppError("rate_limited", `Rate limit of ${d.limit} requests per ${config.windowSeconds} s exceeded`, {
        "Retry-After": String(d.resetSeconds),
      });
    }
    next();
  };
}
