import type { Redis } from "@mailroom/queues";

/**
 * Resolves true once `redis` is ready for commands, false if `timeoutMs` passes first (never, when
 * it is omitted). The API's producer connection does not queue commands while it connects
 * (`enableOfflineQueue: false`), so anything that must not fail on a fresh connection — listening,
 * counting a request — waits here first.
 */
export function redisReady(redis: Redis, timeoutMs?: number): Promise<boolean> {
  if (redis.status === "ready") return Promise.resolve(true);
  if (redis.status === "end") return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      if (timer) clearTimeout(timer);
      redis.off("ready", onReady);
      redis.off("end", onEnd);
      resolve(ok);
    };
    const onReady = () => done(true);
    const onEnd = () => done(false);
    redis.on("ready", onReady);
    redis.on("end", onEnd);
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => done(false), timeoutMs);
  });
}
