import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createTestEnv, startThrowawayRedis, type TestEnv, type ThrowawayRedis, waitFor } from "@mailroom/testing";
import { metricValue, type ServiceProcess, startService, stopService, waitReady } from "./service-processes.ts";

/**
 * Issue 16 item 4: with Redis gone, a worker used to print a line for every reconnect attempt of
 * every connection (ioredis and BullMQ each report it), ~130 lines/s, some as raw multi-line stack
 * traces. Now the first error of the outage is one JSON line, the rest are counted (the
 * mailroom_dependency_errors_total counter and one "redis error repeated" line per 30 s window),
 * readiness says Redis is down, and the recovery is one line. Real processes, a private
 * redis-server killed and started again.
 */
describe("a service process with Redis down", () => {
  const services = ["rule-engine", "webhook-dispatcher"] as const;
  let env: TestEnv;
  let redis: ThrowawayRedis;
  const procs: ServiceProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    redis = await startThrowawayRedis();
    for (const name of services) {
      procs.push(
        await startService(name, {
          DATABASE_URL: env.databaseUrl,
          REDIS_URL: redis.url,
          REDIS_PREFIX: env.redisPrefix,
          LOG_LEVEL: "info",
        }),
      );
    }
    await Promise.all(procs.map((p) => waitReady(p)));
  }, 180_000);
  afterAll(async () => {
    await Promise.all(procs.map(stopService));
    await redis?.stop();
  });

  it("logs the outage once per window with a count, never a raw stack trace, and its end once", async () => {
    const stoppedAt = Date.now();
    await redis.stop();
    // Enough errors that the old one-line-per-error logging would have printed dozens of lines.
    for (const p of procs) {
      await waitFor(
        async () =>
          metricValue(await p.metrics(), "mailroom_dependency_errors_total", { dependency: "redis" }) >= 20 || false,
        {
          what: `${p.name}: 20 Redis errors counted`,
          timeoutMs: 120_000,
          intervalMs: 250,
        },
      );
      const ready = await fetch(`${p.healthUrl}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { checks: Record<string, string> }).checks.redis).not.toBe("ok");
      expect((await fetch(`${p.healthUrl}/healthz`)).status).toBe(200);
    }
    const windows = Math.ceil((Date.now() - stoppedAt) / 30_000);
    for (const p of procs) {
      // Every line on stdout is JSON (logLines throws otherwise), nothing on stderr.
      const lines = p.logLines().filter((l) => l.dependency === "redis");
      expect(p.stderr()).toBe("");
      expect(lines[0]).toMatchObject({ level: 40, msg: "redis error" });
      // What a killed redis-server leaves: the connection closed (FIN), refused on reconnect, or reset
      // (RST) when a command was on its way as it died (the kernel answers it with a reset: seen
      // under load, where a worker is mid-command more often).
      expect(String(lines[0]?.err)).toMatch(/ECONNREFUSED|ECONNRESET|Connection is closed/);
      // One first line, then at most one "repeated" line per 30 s window.
      expect(lines.length).toBeLessThanOrEqual(1 + windows);
      for (const l of lines.slice(1))
        expect(l).toMatchObject({ msg: "redis error repeated", count: expect.any(Number) });
    }

    await redis.start();
    for (const p of procs) {
      await waitFor(async () => p.logLines().some((l) => l.msg === "redis reachable again"), {
        what: `${p.name}: the recovery line`,
        timeoutMs: 60_000,
      });
      await waitReady(p, 60_000);
    }
  }, 300_000);
});
