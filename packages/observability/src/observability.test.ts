import { createServer } from "node:net";
import { afterAll, describe, expect, it } from "@jest/globals";
import type { Logger } from "@mailroom/log";
import { createRedis } from "@mailroom/queues";
import { startThrowawayRedis, waitFor } from "@mailroom/testing";
import pino from "pino";
import { createDeliveryMetrics } from "./delivery-metrics.ts";
import { createDependencyErrorLog } from "./dependency-errors.ts";
import { createHealth, redisReadiness } from "./health.ts";
import { startHealthServer } from "./health-server.ts";
import { startObservability } from "./observability.ts";
import { createRegistry } from "./registry.ts";

/** A pino logger whose JSON lines land in `lines`, as they would on stdout. */
function captured(): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const raw: string[] = [];
  const logger = pino({ level: "info" }, { write: (s: string) => raw.push(s) });
  return {
    logger,
    lines: () =>
      raw
        .join("")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

const get = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
};

describe("health and metrics server", () => {
  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it("serves liveness, readiness and Prometheus metrics; readiness turns false while draining", async () => {
    const { logger } = captured();
    const obs = await startObservability("unit", logger, { HEALTH_PORT: 0, HEALTH_HOST: "127.0.0.1" });
    closers.push(() => obs.close());
    const base = `http://127.0.0.1:${obs.server.port}`;

    expect(await get(`${base}/healthz`)).toMatchObject({ status: 200 });
    // Up but still starting (waiting for its dependencies, not listening yet): alive, not ready.
    const starting = await get(`${base}/readyz`);
    expect(starting.status).toBe(503);
    expect(JSON.parse(starting.text)).toEqual({ ok: false, started: false, draining: false, checks: {} });
    obs.health.started();
    const ready = await get(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ ok: true, started: true, draining: false, checks: {} });

    createDeliveryMetrics(obs.registry, ["webhook"]);
    const metrics = await get(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.type).toContain("text/plain");
    expect(metrics.text).toMatch(/^process_cpu_user_seconds_total\{service="unit"\} /m);
    expect(metrics.text).toMatch(/^mailroom_dependency_errors_total\{dependency="redis",service="unit"\} 0$/m);
    // Readiness as a series (what MailroomServiceNotReady reads), and the dead-delivery series at 0
    // from the start, so the first dead delivery is an increase.
    expect(metrics.text).toMatch(/^mailroom_ready\{service="unit"\} 1$/m);
    expect(metrics.text).toMatch(
      /^mailroom_delivery_attempts_total\{kind="webhook",outcome="dead",service="unit"\} 0$/m,
    );

    obs.drain();
    const draining = await get(`${base}/readyz`);
    expect(draining.status).toBe(503);
    expect(JSON.parse(draining.text)).toMatchObject({ ok: false, draining: true });
    expect((await get(`${base}/metrics`)).text).toMatch(/^mailroom_ready\{service="unit"\} 0$/m);
    // Liveness is unaffected: a draining process is alive and must not be restarted.
    expect((await get(`${base}/healthz`)).status).toBe(200);
    expect((await get(`${base}/nope`)).status).toBe(404);
  });

  it("readiness names a dependency that fails or does not answer in time", async () => {
    const health = createHealth(
      {
        postgres: async () => undefined,
        redis: () => Promise.reject(new Error("ECONNREFUSED 127.0.0.1:1")),
        hung: () => new Promise(() => undefined),
      },
      200,
    );
    health.started();
    const server = await startHealthServer({ registry: createRegistry("unit"), health, port: 0, host: "127.0.0.1" });
    closers.push(() => server.close());
    const res = await get(`http://127.0.0.1:${server.port}/readyz`);
    expect(res.status).toBe(503);
    expect(JSON.parse(res.text)).toEqual({
      ok: false,
      started: true,
      draining: false,
      checks: { postgres: "ok", redis: "ECONNREFUSED 127.0.0.1:1", hung: "no answer within 200 ms" },
    });
  });

  it("fails to start on a port that is taken, instead of running without probes", async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", () => r()));
    const port = (blocker.address() as { port: number }).port;
    closers.push(() => new Promise((r) => blocker.close(() => r())));
    await expect(
      startHealthServer({ registry: createRegistry("unit"), health: createHealth(), port, host: "127.0.0.1" }),
    ).rejects.toThrow(`cannot listen on 127.0.0.1:${port} (HEALTH_PORT): the port is already in use (EADDRINUSE)`);
    // A service names the setting its port came from.
    await expect(
      startObservability("rule-engine", captured().logger, { HEALTH_PORT_RULE_ENGINE: port, HEALTH_HOST: "127.0.0.1" }),
    ).rejects.toMatchObject({
      name: "StartupError",
      message: `cannot listen on 127.0.0.1:${port} (HEALTH_PORT_RULE_ENGINE): the port is already in use (EADDRINUSE)`,
    });
  });
});

describe("dependency errors with Redis down", () => {
  it("logs the first error at once, folds the rest into one line with the count, and the recovery", async () => {
    const redisServer = await startThrowawayRedis();
    const { logger, lines } = captured();
    const registry = createRegistry("unit");
    // A long window: nothing is summarised by the timer during the test; flush() does it.
    const errors = createDependencyErrorLog(logger, { windowMs: 600_000, registry });
    // A worker connection as the services use (retries for ever), with no delay between retries so
    // the outage produces many errors quickly.
    const redis = createRedis(redisServer.url, "worker", { retryStrategy: () => 10 });
    let seen = 0;
    redis.on("error", (err) => {
      seen++;
      errors.report("redis", err, { source: "test connection" });
    });
    redis.on("ready", () => errors.recovered("redis"));
    try {
      await waitFor(async () => redis.status === "ready", { what: "redis ready" });
      await redisServer.stop();
      await waitFor(async () => seen >= 30, { what: "30 connection errors", timeoutMs: 60_000 });
      errors.flush();
      const during = lines().filter((l) => l.dependency === "redis");
      expect(during).toHaveLength(2);
      expect(during[0]).toMatchObject({ level: 40, msg: "redis error", source: "test connection" });
      expect(String(during[0]?.err)).toContain("ECONNREFUSED");
      expect(during[1]).toMatchObject({ level: 40, dependency: "redis", msg: "redis error repeated" });
      // Errors keep coming while flush runs; the folded count is every one reported before it.
      expect(Number(during[1]?.count)).toBeGreaterThanOrEqual(29);
      expect(String(during[1]?.err)).toContain("ECONNREFUSED");
      const total = (await registry.getSingleMetric("mailroom_dependency_errors_total")?.get())?.values[0]?.value;
      expect(total).toBeGreaterThanOrEqual(30);

      await redisServer.start();
      await waitFor(async () => redis.status === "ready", { what: "redis ready again", timeoutMs: 30_000 });
      const after = lines().filter((l) => l.dependency === "redis");
      expect(after.at(-1)).toMatchObject({ level: 30, msg: "redis reachable again" });
      // flush() above closed the first outage window; the errors since then are counted anew.
      expect(Number(after.at(-1)?.errors)).toBeGreaterThanOrEqual(1);
    } finally {
      redis.disconnect();
      errors.flush();
      await redisServer.stop();
    }
  }, 90_000);

  it("readiness of a Redis connection fails fast while it is not connected", async () => {
    const check = redisReadiness({ status: "reconnecting", ping: () => new Promise(() => undefined) });
    await expect(check()).rejects.toThrow("connection reconnecting");
  });
});
