import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createTestEnv, type TestEnv, waitFor } from "@mailroom/testing";
import { drainWorker } from "./drain.ts";
import { createQueue, createWorker, enqueue, type TypedQueue } from "./queues.ts";
import { createRedis, type RedisClient } from "./redis.ts";

/**
 * A worker stopped for a shutdown fetches nothing more; its running jobs finish within the budget,
 * and what is still running then goes back to the queue at once (not after lock expiry), where
 * another worker takes it.
 */
describe("drainWorker", () => {
  let env: TestEnv;
  let redis: RedisClient;
  let queue: TypedQueue<"delivery">;
  const opened: RedisClient[] = [];
  const connection = () => {
    const c = createRedis(env.redisUrl, "worker");
    opened.push(c);
    return c;
  };
  beforeAll(async () => {
    env = await createTestEnv();
    redis = createRedis(env.redisUrl, "producer");
    queue = createQueue("delivery", { connection: redis, prefix: env.redisPrefix });
  });
  afterAll(async () => {
    await queue?.close();
    for (const c of opened) c.disconnect();
    redis?.disconnect();
    await env?.cleanup();
  });

  it("lets a running job finish within the budget and fetches nothing more", async () => {
    let release: () => void = () => undefined;
    const ran: string[] = [];
    const worker = createWorker(
      "delivery",
      async ({ deliveryId }) => {
        ran.push(deliveryId);
        await new Promise<void>((r) => {
          release = r;
        });
      },
      { connection: connection(), prefix: env.redisPrefix, concurrency: 1 },
    );
    const completed: string[] = [];
    worker.on("completed", (job) => completed.push(job.id ?? ""));
    await enqueue(queue, "delivery", { deliveryId: "dlv_fin" }, { jobId: "dlv_fin.1" });
    await waitFor(async () => ran.length === 1, { what: "the job to start", timeoutMs: 90_000 });
    await enqueue(queue, "delivery", { deliveryId: "dlv_next" }, { jobId: "dlv_next.1" });
    const drained = drainWorker(worker, 120_000);
    release();
    expect(await drained).toEqual({ finished: true, handedBack: 0 });
    expect(completed).toEqual(["dlv_fin.1"]);
    expect(ran).toEqual(["dlv_fin"]);
    expect(await queue.getJobState("dlv_next.1")).toBe("waiting");
    await queue.remove("dlv_next.1");
  });

  it("hands a job still running at the budget back to the queue, where another worker takes it", async () => {
    const stuck = createWorker("delivery", () => new Promise<void>(() => undefined), {
      connection: connection(),
      prefix: env.redisPrefix,
      concurrency: 1,
      // Far beyond the test: only a hand-back can free the job in time.
      lockDuration: 600_000,
      stalledInterval: 600_000,
    });
    // Its abandoned handler's connection is closed under it: BullMQ reports that as an "error".
    stuck.on("error", () => undefined);
    await enqueue(queue, "delivery", { deliveryId: "dlv_stuck" }, { jobId: "dlv_stuck.1" });
    await waitFor(async () => (await queue.getJobState("dlv_stuck.1")) === "active", {
      what: "the job to start",
      timeoutMs: 90_000,
    });
    expect(await drainWorker(stuck, 200)).toEqual({ finished: false, handedBack: 1 });
    expect(await queue.getJobState("dlv_stuck.1")).toBe("waiting");

    const done: string[] = [];
    const next = createWorker("delivery", async ({ deliveryId }) => void done.push(deliveryId), {
      connection: connection(),
      prefix: env.redisPrefix,
      concurrency: 1,
    });
    await waitFor(async () => done.length > 0 && (await queue.getJobState("dlv_stuck.1")) === "unknown", {
      what: "another worker to complete it (completed jobs are removed)",
      timeoutMs: 90_000,
    });
    expect(done).toEqual(["dlv_stuck"]);
    await next.close();
  });
});
