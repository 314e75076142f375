/** A readiness check: resolves when the dependency answers, rejects (or times out) when it does not. */
export type ReadinessCheck = () => Promise<unknown>;

export type ReadinessReport = { ok: boolean; started: boolean; draining: boolean; checks: Record<string, string> };

export type Health = {
  /** The service has finished starting (listening, consuming): until then /readyz answers 503. */
  started(): void;
  /** From the first step of shutdown on, /readyz answers 503 so load balancers stop sending work. */
  drain(): void;
  readonly draining: boolean;
  /** Adds a readiness check once its client exists (the port is up before the clients are made). */
  addCheck(name: string, check: ReadinessCheck): void;
  ready(): Promise<ReadinessReport>;
};

/**
 * Liveness and readiness of one process. Liveness (/healthz) never looks at dependencies, so a
 * Redis outage does not get every pod restarted; readiness (/readyz) does, with a timeout per check
 * so that a hung dependency answers "not ready" instead of a hung probe.
 */
export function createHealth(initial: Record<string, ReadinessCheck> = {}, timeoutMs = 2_000): Health {
  const checks = { ...initial };
  let draining = false;
  let started = false;
  return {
    started() {
      started = true;
    },
    drain() {
      draining = true;
    },
    get draining() {
      return draining;
    },
    addCheck(name, check) {
      checks[name] = check;
    },
    async ready() {
      const entries = await Promise.all(
        Object.entries(checks).map(async ([name, check]) => [name, await outcome(check, timeoutMs)] as const),
      );
      const results = Object.fromEntries(entries);
      const ok = started && !draining && entries.every(([, r]) => r === "ok");
      return { ok, started, draining, checks: results };
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
