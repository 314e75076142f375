import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRedisConnections } from "@mailroom/queues";
import { createTestEnv, startThrowawayRedis, type TestEnv, type ThrowawayRedis, waitFor } from "@mailroom/testing";
import { Redis } from "ioredis";

const root = resolve(import.meta.dirname, "..");

/** A Redis that may evict keys: the misconfiguration every service must warn about. */
async function lru(url: string) {
  const admin = new Redis(url);
  await admin.config("SET", "maxmemory-policy", "allkeys-lru");
  admin.disconnect();
}

/**
 * Issue 14 item 5: every service makes its Redis connections and queues through
 * createRedisConnections, so each has an error listener (no raw ioredis/BullMQ stack traces on
 * stderr when Redis goes away, a log line instead) and each checks the eviction policy (the API
 * never did). A private redis-server set to allkeys-lru stands in for a misconfigured Redis.
 */
describe("Redis connections are made and error-handled in one place", () => {
  let env: TestEnv;
  let redis: ThrowawayRedis;

  beforeAll(async () => {
    env = await createTestEnv();
    redis = await startThrowawayRedis();
    await lru(redis.url);
  });
  afterAll(async () => {
    await redis?.stop();
    await env?.cleanup();
  });

  it("createRedisConnections: one eviction warning, each error reported once, queues included", async () => {
    const own = await startThrowawayRedis();
    await lru(own.url);
    const warnings: string[] = [];
    const errors: { err: Error; source: string }[] = [];
    const conns = createRedisConnections({
      url: own.url,
      prefix: env.redisPrefix,
      logger: { warn: (_obj, msg) => warnings.push(String(msg)) },
      onError: (err, source) => errors.push({ err, source }),
    });
    const worker = conns.connect("worker");
    const producer = conns.connect("producer");
    const queue = conns.queue("delivery", producer);
    try {
      await queue.waitUntilReady();
      await waitFor(async () => warnings.length > 0, { what: "the eviction warning", timeoutMs: 20_000 });
      expect(warnings).toEqual([expect.stringContaining('maxmemory-policy is "allkeys-lru"')]);

      // Redis gone: each connection reports its reconnect failures; the queue, which BullMQ feeds
      // the same Error objects, does not report them a second time.
      await own.stop();
      await waitFor(
        async () =>
          errors.some((e) => e.source === "redis worker") && errors.some((e) => e.source === "redis producer"),
        { what: "both connections to report the lost Redis", timeoutMs: 20_000 },
      );
      expect(new Set(errors.map((e) => e.err)).size).toBe(errors.length);
      expect(errors.filter((e) => e.source.startsWith("queue"))).toEqual([]);
    } finally {
      worker.disconnect();
      producer.disconnect();
      await queue.close().catch(() => undefined);
      await own.stop();
    }
  }, 60_000);

  describe("in every service process that uses Redis", () => {
    const services = ["api", "smtp-ingest", "rule-engine", "webhook-dispatcher", "outbound-sender"] as const;
    const procs = new Map<string, { child: ChildProcess; stdout: string; stderr: string }>();

    beforeAll(() => {
      for (const service of services) {
        const child = spawn(process.execPath, ["--import", "tsx", `services/${service}/src/main.ts`], {
          cwd: root,
          env: {
            ...process.env,
            DATABASE_URL: env.databaseUrl,
            REDIS_URL: redis.url,
            REDIS_PREFIX: env.redisPrefix,
            LOG_LEVEL: "warn",
            API_PORT: "0",
            API_HOST: "127.0.0.1",
            SMTP_PORT: "0",
            SMTP_HOST: "127.0.0.1",
            HEALTH_PORT: "0",
            HEALTH_HOST: "127.0.0.1",
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        const p = { child, stdout: "", stderr: "" };
        child.stdout?.on("data", (d: Buffer) => {
          p.stdout += d.toString();
        });
        child.stderr?.on("data", (d: Buffer) => {
          p.stderr += d.toString();
        });
        procs.set(service, p);
      }
    });
    afterAll(async () => {
      for (const { child } of procs.values()) {
        if (child.exitCode !== null || child.signalCode !== null) continue;
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGKILL");
        await exited;
      }
    });

    const proc = (service: string) => {
      const p = procs.get(service);
      if (!p) throw new Error(`no process for ${service}`);
      return p;
    };
    const alive = (service: string) => {
      const p = proc(service);
      if (p.child.exitCode !== null) throw new Error(`${service} exited ${p.child.exitCode}: ${p.stderr}${p.stdout}`);
      return p;
    };

    it.each(services)(
      "%s warns that the eviction policy is not noeviction",
      async (service) => {
        await waitFor(async () => alive(service).stdout.includes('maxmemory-policy is \\"allkeys-lru\\"'), {
          what: `${service}'s eviction warning`,
          timeoutMs: 90_000,
        });
      },
      120_000,
    );

    it("with Redis gone, each logs the error through its listener and prints no raw stack trace", async () => {
      await redis.stop();
      for (const service of services) {
        await waitFor(async () => /"msg":"redis error"/.test(alive(service).stdout), {
          what: `${service} to log the lost Redis`,
          timeoutMs: 60_000,
        });
      }
      for (const service of services) {
        expect([service, proc(service).stderr]).not.toEqual([
          service,
          expect.stringMatching(/ECONNREFUSED|Unhandled error event/),
        ]);
      }
    }, 120_000);
  });
});
