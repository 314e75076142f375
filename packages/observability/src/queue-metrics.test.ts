import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createQueue, createRedis, enqueue, type Redis, type TypedQueue } from "@mailroom/queues";
import { createTestEnv, startThrowawayRedis, type TestEnv } from "@mailroom/testing";
import { Registry } from "prom-client";
import { registerQueueMetrics } from "./queue-metrics.ts";

const series = async (registry: Registry, name: string) =>
  (await registry.getSingleMetric(name)?.get())?.values.map((v) => ({ labels: v.labels, value: v.value })) ?? [];

describe("queue metrics", () => {
  let env: TestEnv;
  let redis: Redis;
  let queue: TypedQueue<"inbound">;
  beforeAll(async () => {
    env = await createTestEnv();
    redis = createRedis(env.redisUrl, "producer");
    queue = createQueue("inbound", { connection: redis, prefix: env.redisPrefix });
  });
  afterAll(async () => {
    await queue.close();
    await env.cleanup();
    redis.disconnect();
  });

  it("reports depth per state and the age of the oldest waiting job, read at scrape time", async () => {
    const registry = new Registry();
    let now = Date.now();
    registerQueueMetrics(registry, [queue], 5_000, () => now);
    expect(await series(registry, "mailroom_queue_oldest_waiting_seconds")).toEqual([
      { labels: { queue: "inbound" }, value: 0 },
    ]);

    const first = await enqueue(queue, "inbound", { spoolRecipientId: "rcp_first" }, { jobId: "rcp_first" });
    await enqueue(queue, "inbound", { spoolRecipientId: "rcp_second" }, { jobId: "rcp_second" });
    // Waiting for its backoff: delayed, not counted as waiting, not the oldest waiting job.
    await enqueue(queue, "inbound", { spoolRecipientId: "rcp_later" }, { jobId: "rcp_later", delay: 3_600_000 });
    now = first.timestamp + 42_000;

    const jobs = await series(registry, "mailroom_queue_jobs");
    const count = (state: string) => jobs.find((s) => s.labels.state === state)?.value;
    expect({ waiting: count("waiting"), delayed: count("delayed"), active: count("active") }).toEqual({
      waiting: 2,
      delayed: 1,
      active: 0,
    });
    expect(await series(registry, "mailroom_queue_oldest_waiting_seconds")).toEqual([
      { labels: { queue: "inbound" }, value: 42 },
    ]);
    expect(await series(registry, "mailroom_queue_scrape_errors")).toEqual([
      { labels: { queue: "inbound" }, value: 0 },
    ]);
  });

  it("counts jobs that wait with a priority (the inbound queue's) as waiting, the oldest included", async () => {
    const registry = new Registry();
    let now = Date.now();
    registerQueueMetrics(registry, [queue], 5_000, () => now);
    await queue.obliterate({ force: true });
    const first = await enqueue(queue, "inbound", { spoolRecipientId: "rcp_p1" }, { jobId: "rcp_p1", priority: 7 });
    await enqueue(queue, "inbound", { spoolRecipientId: "rcp_p2" }, { jobId: "rcp_p2", priority: 1 });
    now = first.timestamp + 30_000;
    const jobs = await series(registry, "mailroom_queue_jobs");
    expect(jobs.find((s) => s.labels.state === "prioritized")?.value).toBe(2);
    expect(await series(registry, "mailroom_queue_oldest_waiting_seconds")).toEqual([
      { labels: { queue: "inbound" }, value: 30 },
    ]);
  });

  it("with Redis gone the scrape still answers: the queue's series are left out and the error is flagged", async () => {
    const own = await startThrowawayRedis();
    const conn = createRedis(own.url, "worker"); // retries for ever: a read would wait without the limit
    conn.on("error", () => undefined);
    const q = createQueue("delivery", { connection: conn, prefix: "gone" });
    q.on("error", () => undefined);
    try {
      await q.getJobCounts();
      await own.stop();
      const registry = new Registry();
      registerQueueMetrics(registry, [q], 300);
      const text = await registry.metrics();
      expect(text).not.toMatch(/^mailroom_queue_jobs\{/m);
      expect(text).toMatch(/^mailroom_queue_scrape_errors\{queue="delivery"\} 1$/m);
    } finally {
      conn.disconnect();
      await q.close().catch(() => undefined);
      await own.stop();
    }
  });
});
