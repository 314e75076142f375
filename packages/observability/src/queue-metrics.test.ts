import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createQueue, createRedis, createWorker, enqueue, type Redis, type TypedQueue } from "@mailroom/queues";
import { createTestEnv, startThrowawayRedis, type TestEnv, waitFor } from "@mailroom/testing";
import { Registry } from "prom-client";
import { registerQueueMetrics } from "./queue-metrics.ts";

const series = async (registry: Registry, name: string) =>
  (await registry.getSingleMetric(name)?.get())?.values.map((v) => ({ labels: v.labels, value: v.value })) ?? [];

const gaugeValue = async (registry: Registry, name: string, labels: Record<string, string>) =>
  (await series(registry, name)).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

describe("queue metrics", () => {
  let env: TestEnv;
  let redis: Redis;
  let inbound: TypedQueue<"inbound">;
  let forward: TypedQueue<"forward">;
  let delivery: TypedQueue<"delivery">;
  beforeAll(async () => {
    env = await createTestEnv();
    redis = createRedis(env.redisUrl, "producer");
    inbound = createQueue("inbound", { connection: redis, prefix: env.redisPrefix });
    forward = createQueue("forward", { connection: redis, prefix: env.redisPrefix });
    delivery = createQueue("delivery", { connection: redis, prefix: env.redisPrefix });
    await waitFor(async () => redis.status === "ready", { what: "Redis connected" });
  });
  afterAll(async () => {
    await Promise.all([inbound.close(), forward.close(), delivery.close()]);
    await env.cleanup();
    redis.disconnect();
  });

  it("reports every queue of the catalog, consumed here or not: depth per state and the oldest waiting job", async () => {
    const registry = new Registry();
    let now = Date.now();
    registerQueueMetrics(registry, redis, env.redisPrefix, { now: () => now, cacheMs: 0 });
    expect(await series(registry, "mailroom_queue_oldest_waiting_seconds")).toEqual(
      ["inbound", "delivery", "forward", "outbound"].map((queue) => ({ labels: { queue }, value: 0 })),
    );

    const first = await enqueue(inbound, "inbound", { spoolRecipientId: "rcp_first" }, { jobId: "rcp_first" });
    await enqueue(inbound, "inbound", { spoolRecipientId: "rcp_second" }, { jobId: "rcp_second" });
    // Waiting for its backoff: delayed, not counted as waiting, not the oldest waiting job.
    await enqueue(inbound, "inbound", { spoolRecipientId: "rcp_later" }, { jobId: "rcp_later", delay: 3_600_000 });
    await enqueue(forward, "forward", { deliveryId: "dlv_f" }, { jobId: "dlv_f.1" });
    now = first.timestamp + 42_000;

    const count = (queue: string, state: string) => gaugeValue(registry, "mailroom_queue_jobs", { queue, state });
    expect({
      waiting: await count("inbound", "waiting"),
      delayed: await count("inbound", "delayed"),
      active: await count("inbound", "active"),
      forward: await count("forward", "waiting"),
      outbound: await count("outbound", "waiting"),
    }).toEqual({ waiting: 2, delayed: 1, active: 0, forward: 1, outbound: 0 });
    expect(await gaugeValue(registry, "mailroom_queue_oldest_waiting_seconds", { queue: "inbound" })).toBe(42);
    expect(await series(registry, "mailroom_queue_scrape_errors")).toEqual(
      ["inbound", "delivery", "forward", "outbound"].map((queue) => ({ labels: { queue }, value: 0 })),
    );
  });

  it("counts jobs that wait with a priority (the inbound queue's) as waiting, the oldest included", async () => {
    const registry = new Registry();
    let now = Date.now();
    registerQueueMetrics(registry, redis, env.redisPrefix, { queues: ["inbound"], now: () => now, cacheMs: 0 });
    await inbound.obliterate({ force: true });
    const first = await enqueue(inbound, "inbound", { spoolRecipientId: "rcp_p1" }, { jobId: "rcp_p1", priority: 7 });
    await enqueue(inbound, "inbound", { spoolRecipientId: "rcp_p2" }, { jobId: "rcp_p2", priority: 1 });
    now = first.timestamp + 30_000;
    expect(await gaugeValue(registry, "mailroom_queue_jobs", { queue: "inbound", state: "prioritized" })).toBe(2);
    expect(await gaugeValue(registry, "mailroom_queue_oldest_waiting_seconds", { queue: "inbound" })).toBe(30);
  });

  it("a delayed job counts from when it became due, whether or not a worker has promoted it since", async () => {
    const registry = new Registry();
    let now = Date.now();
    registerQueueMetrics(registry, redis, env.redisPrefix, { queues: ["delivery"], now: () => now, cacheMs: 0 });
    const age = () => gaugeValue(registry, "mailroom_queue_oldest_waiting_seconds", { queue: "delivery" });
    // Two attempts scheduled 200 ms ahead. No worker runs: they stay in the delayed set once due.
    const a = await enqueue(delivery, "delivery", { deliveryId: "dlv_a" }, { jobId: "dlv_a.2", delay: 200 });
    const b = await enqueue(delivery, "delivery", { deliveryId: "dlv_b" }, { jobId: "dlv_b.2", delay: 200 });
    now = a.timestamp + 100;
    expect(await age()).toBe(0);
    now = a.timestamp + 200 + 7_000;
    expect(await age()).toBe(7);

    // A worker takes one: BullMQ promotes both due jobs to the wait list (zeroing their `delay`
    // field) and leaves the other waiting there. Its age still counts from its due time.
    const connection = createRedis(env.redisUrl, "worker");
    const worker = createWorker("delivery", async () => undefined, {
      connection,
      prefix: env.redisPrefix,
      autorun: false,
    });
    try {
      const due = b.timestamp + 200;
      while (Date.now() < due) await new Promise((r) => setTimeout(r, due - Date.now()));
      expect((await worker.getNextJob("token"))?.id).toBe("dlv_a.2");
      expect(await gaugeValue(registry, "mailroom_queue_jobs", { queue: "delivery", state: "waiting" })).toBe(1);
      expect(await gaugeValue(registry, "mailroom_queue_jobs", { queue: "delivery", state: "active" })).toBe(1);
      now = a.timestamp + 200 + 9_000;
      const left = await age();
      expect(left).toBe(9 - (b.timestamp - a.timestamp) / 1000);
    } finally {
      await worker.close(true);
      connection.disconnect();
    }
  });

  it("a reading is reused for cacheMs, so several scrapers cost one Redis read", async () => {
    const registry = new Registry();
    let now = Date.now();
    registerQueueMetrics(registry, redis, `${env.redisPrefix}-cache`, { queues: ["outbound"], now: () => now });
    const own = createQueue("outbound", { connection: redis, prefix: `${env.redisPrefix}-cache` });
    const waiting = () => gaugeValue(registry, "mailroom_queue_jobs", { queue: "outbound", state: "waiting" });
    try {
      expect(await waiting()).toBe(0);
      await enqueue(own, "outbound", { emailId: "em_1" }, { jobId: "em_1.1" });
      now += 4_000;
      expect(await waiting()).toBe(0);
      now += 1_000;
      expect(await waiting()).toBe(1);
    } finally {
      await own.close();
    }
  });

  it("with Redis gone the scrape still answers: the queues' series are left out and the error is flagged", async () => {
    const own = await startThrowawayRedis();
    const conn = createRedis(own.url, "worker"); // retries for ever: a read would wait without the limit
    conn.on("error", () => undefined);
    try {
      await conn.ping();
      await own.stop();
      const registry = new Registry();
      registerQueueMetrics(registry, conn, "gone", { timeoutMs: 300 });
      const text = await registry.metrics();
      expect(text).not.toMatch(/^mailroom_queue_jobs\{/m);
      for (const queue of ["inbound", "delivery", "forward", "outbound"]) {
        expect(text).toMatch(new RegExp(`^mailroom_queue_scrape_errors\\{queue="${queue}"\\} 1$`, "m"));
      }
    } finally {
      conn.disconnect();
      await own.stop();
    }
  });
});
