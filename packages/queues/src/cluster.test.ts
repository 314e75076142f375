import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startRedisCluster, type TestRedisCluster, waitFor } from "@mailroom/testing";
import { Cluster } from "ioredis";
import { readQueueDepths } from "./depth.ts";
import { createQueue, createWorker, enqueue } from "./queues.ts";
import { createRedis, duplicateRedis, isClusterUrl, queuePrefix, type RedisClient } from "./redis.ts";

/**
 * BullMQ on a real Redis Cluster (three masters with a replica each, started by the test): a
 * `redis+cluster://` REDIS_URL gives a cluster client, each queue's keys share one slot (BullMQ's
 * Lua scripts touch many keys at once, which a cluster allows only within one slot), and jobs flow.
 */
let cluster: TestRedisCluster;
const clients: RedisClient[] = [];
/**
 * A cluster client once it is ready. A producer has no offline queue (it must fail fast in request
 * paths), so a command sent while the client is still discovering the slots fails with "Cluster
 * isn't ready"; on a busy machine that discovery can outlast the next few lines of a test.
 */
const connect = async (role: "worker" | "producer") => {
  const c = createRedis(cluster.url, role);
  c.on("error", () => undefined);
  clients.push(c);
  await waitFor(async () => c.status === "ready", { what: `the ${role} cluster connection ready`, timeoutMs: 60_000 });
  return c;
};

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 120_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await cluster?.stop();
});

describe("Redis Cluster", () => {
  it("recognises a cluster URL and keeps a single Redis as it was", () => {
    expect(isClusterUrl("redis+cluster://10.0.0.1:6379,10.0.0.2:6379")).toBe(true);
    expect(isClusterUrl("rediss+cluster://user:pw@cache.example:6380")).toBe(true);
    expect(isClusterUrl("redis://127.0.0.1:6379")).toBe(false);
    const single = createRedis("redis://127.0.0.1:6379", "producer", { lazyConnect: true });
    expect(single).not.toBeInstanceOf(Cluster);
    expect(queuePrefix("mailroom", "inbound", single)).toBe("mailroom");
    single.disconnect();
  });

  it("runs jobs through a catalog queue with every key of the queue in one slot", async () => {
    const producer = await connect("producer");
    const worker = await connect("worker");
    expect(producer).toBeInstanceOf(Cluster);
    const prefix = `mailroom-test-${process.pid}`;
    expect(queuePrefix(prefix, "inbound", producer)).toBe(`${prefix}:{inbound}`);
    const queue = createQueue("inbound", { connection: producer, prefix });
    const seen: string[] = [];
    const w = createWorker("inbound", async (p) => void seen.push(p.spoolRecipientId), { connection: worker, prefix });
    w.on("error", () => undefined);
    try {
      for (let i = 0; i < 20; i++) {
        await enqueue(queue, "inbound", { spoolRecipientId: `rcp_${i}` }, { jobId: `rcp_${i}` });
      }
      await waitFor(async () => seen.length === 20, { what: "20 jobs processed", timeoutMs: 60_000 });
      expect(new Set(seen).size).toBe(20);

      // Every key this queue wrote, on whichever master holds it, hashes to one slot.
      const keys: string[] = [];
      const masters = (producer as Cluster).nodes("master");
      for (const m of masters) keys.push(...(await m.keys(`${prefix}:*`)));
      expect(keys.length).toBeGreaterThan(3);
      const slots = new Set(await Promise.all(keys.map((k) => producer.cluster("KEYSLOT", k))));
      expect(slots.size).toBe(1);
    } finally {
      await w.close();
      await queue.close();
    }
  });

  it("duplicates a cluster connection as a cluster connection (event subscribers)", async () => {
    const producer = await connect("producer");
    const sub = duplicateRedis(producer, { enableOfflineQueue: true, maxRetriesPerRequest: null });
    clients.push(sub);
    expect(sub).toBeInstanceOf(Cluster);
    const got = new Promise<string>((resolve) => sub.on("message", (_ch: string, text: string) => resolve(text)));
    await sub.subscribe("mailroom-test-events");
    await producer.publish("mailroom-test-events", "hello");
    expect(await got).toBe("hello");
  });

  it("reads the depth of every catalog queue, each in its own slot, with one call per queue", async () => {
    const producer = await connect("producer");
    const prefix = `mailroom-depth-${process.pid}`;
    const inbound = createQueue("inbound", { connection: producer, prefix });
    const forward = createQueue("forward", { connection: producer, prefix });
    try {
      const job = await enqueue(inbound, "inbound", { spoolRecipientId: "rcp_c1" }, { jobId: "rcp_c1" });
      await enqueue(forward, "forward", { deliveryId: "dlv_c1" }, { jobId: "dlv_c1.1", delay: 3_600_000 });
      const depths = await readQueueDepths(producer, prefix, job.timestamp + 5_000);
      expect([...depths.keys()]).toEqual(["inbound", "delivery", "forward", "outbound"]);
      expect(depths.get("inbound")).toMatchObject({ counts: { waiting: 1, delayed: 0 }, oldestSeconds: 5 });
      expect(depths.get("forward")).toMatchObject({ counts: { waiting: 0, delayed: 1 }, oldestSeconds: 0 });
      expect(depths.get("outbound")?.counts.waiting).toBe(0);
    } finally {
      await Promise.all([inbound.obliterate({ force: true }), forward.obliterate({ force: true })]);
      await Promise.all([inbound.close(), forward.close()]);
    }
  });
});
