/** A readiness check: resolves when the dependency answers, rejects (or times out) when it does not. */
export type ReadinessCheck = () => Promise<unknown>;

export type ReadinessReport = { ok: boolean; draining: boolean; checks: Record<string, string> };

export type Health = {
  /** From the first step of shutdown on, /readyz answers 503 so load balancers stop sending work. */
  drain(): void;
  readonly draining: boolean;
  ready(): Promise<ReadinessReport>;
};

/**
 * Liveness and readiness of one process. Liveness (/healthz) never looks at dependencies, so a
 * Redis outage does not get every pod restarted; readiness (/readyz) does, with a timeout per check
 * so that a hung dependency answers "not ready" instead of a hung probe.
 */
export function createHealth(checks: Record<string, ReadinessCheck> = {}, timeoutMs = 2_000): Health {
  let draining = false;
  return {
    drain() {
      draining = true;
    },
    get draining() {
      return draining;
    },
    async ready() {
      const entries = await Promise.all(
        Object.entries(checks).map(async ([name, check]) => [name, await outcome(check, timeoutMs)] as const),
      );
      const results = Object.fromEntries(entries);
      const ok = !draining && entries.every(([, r]) => r === "ok");
      return { ok, draining, checks: results };
    },
  };
}

async function outcome(check: ReadinessCheck, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([
      check().then(
        () => "ok",
        (err: unknown) => (err instanceof Error ? err.message : String(err)),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Readiness of a Redis client: PING when it is connected. A worker connection queues commands while
 * Redis is away (maxRetriesPerRequest: null), so a PING then would wait for ever, once per probe.
 */
export const redisReadiness =
  (redis: { status: string; ping(): Promise<unknown> }): ReadinessCheck =>
  () =>
    redis.status === "ready" ? redis.ping() : Promise.reject(new Error(`connection ${redis.status}`));
