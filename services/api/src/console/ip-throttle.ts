import { AppError } from "@mailroom/core";
import type { Logger } from "@mailroom/log";
import type { Redis } from "@mailroom/queues";

/**
 * Per-address sign-in throttling, beside the lockout (lockout.ts): the lockout stops guessing one
 * email's password from one address, this stops one address from trying many emails (spraying one
 * password over every member). The address is the client's (lib/client-address.ts: X-Forwarded-For
 * only from a trusted proxy), an IPv6 client counted by its /64. Failed sign-ins only are counted, so members behind one NAT who type their
 * password right are never slowed; once an address has SIGN_IN_FAILURES_PER_IP failures within
 * SIGN_IN_WINDOW_MS of its first, every sign-in from it is refused with 429 until the window ends.
 * The count lives in Redis so that every API replica shares it. Redis down: sign-in goes on
 * uncounted (logged) — the lockout in Postgres still holds, and sign-in must not depend on a cache.
 */
export const SIGN_IN_FAILURES_PER_IP = 30;
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000;

export type SignInThrottle = {
  /** Throws 429 (Retry-After) when `ip` has used up its failures. */
  check(ip: string): Promise<void>;
  /** Counts one failed sign-in of `ip`. */
  failed(ip: string): Promise<void>;
};

export function signInThrottle(redis: Redis, prefix: string, logger: Logger): SignInThrottle {
  const key = (ip: string) => `${prefix}:console:signin-failures:{${ip}}`;
  const unavailable = (err: unknown) =>
    logger.warn({ err: (err as Error).message }, "sign-in throttle unavailable; per-address lockout only");
  const usable = () => redis.status === "ready";
  return {
    async check(ip) {
      if (!usable()) return;
      let count = 0;
      let ttl = 0;
      try {
        const [n, t] = await Promise.all([redis.get(key(ip)), redis.pttl(key(ip))]);
        count = Number(n ?? 0);
        ttl = t;
      } catch (err) {
        return unavailable(err);
      }
      if (count < SIGN_IN_FAILURES_PER_IP) return;
      const seconds = Math.max(1, Math.ceil(ttl / 1000));
      throw new AppError("rate_limited", `Too many failed sign-ins from your address; try again in ${seconds} s`, {
        "Retry-After": String(seconds),
      });
    },
    async failed(ip) {
      if (!usable()) return;
      // The window starts at the first failure (SET … NX); INCR keeps the expiry.
      await redis.multi().set(key(ip), "0", "PX", SIGN_IN_WINDOW_MS, "NX").incr(key(ip)).exec().catch(unavailable);
    },
  };
}
