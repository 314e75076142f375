import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createTestEnv, type TestEnv } from "@mailroom/testing";
import { createQueue, enqueue, enqueueBulk, type TypedQueue } from "./queues.ts";
import { createRedis, type RedisClient } from "./redis.ts";

/**
 * A queue handle carries its catalog key in its type. The `@ts-expect-error` lines are the test
 * that matters: `npm run typecheck` (tsconfig.json includes packages/*\/src) fails if any of them
 * stops being an error, i.e. if the wrong queue could be passed again. The jest part checks that
 * the run-time guard still refuses a handle cast past the type.
 */
describe("typed queue handles", () => {
  let env: TestEnv;
  let redis: RedisClient;
  let delivery: TypedQueue<"delivery">;
  let forward: TypedQueue<"forward">;
  beforeAll(async () => {
    env = await createTestEnv();
    redis = createRedis(env.redisUrl, "producer");
    delivery = createQueue("delivery", { connection: redis, prefix: env.redisPrefix });
    forward = createQueue("forward", { connection: redis, prefix: env.redisPrefix });
  });
  afterAll(async () => {
    await delivery?.close();
    await forward?.close();
    redis?.disconnect();
    await env?.cleanup();
  });

  it("rejects the wrong queue at compile time; the right one enqueues", async () => {
    const payload = { deliveryId: "dlv_typed1" };
    // Each call below is refused by tsc; at run time each rejects before touching Redis.
    // @ts-expect-error the forward queue is not the delivery queue
    await expect(enqueue(forward, "delivery", payload, { jobId: "dlv_typed1.1" })).rejects.toThrow(/not the delivery/);
    // @ts-expect-error the same for many jobs at once
    await expect(enqueueBulk(forward, "delivery", [{ payload, options: { jobId: "x.1" } }])).rejects.toThrow();
    // @ts-expect-error a queue typed for one key cannot be held where another key's queue is expected
    const wrongHolder: { delivery: TypedQueue<"delivery"> } = { delivery: forward };
    expect(wrongHolder.delivery.name).toBe("forward");

    const job = await enqueue(delivery, "delivery", payload, { jobId: "dlv_typed1.1" });
    expect((await delivery.getJob(job.id ?? ""))?.data).toEqual(payload);
    expect(await forward.count()).toBe(0);
  });

  it("keeps the run-time check for a handle cast past its type", async () => {
    const cast = forward as unknown as TypedQueue<"delivery">;
    await expect(enqueue(cast, "delivery", { deliveryId: "dlv_typed2" }, { jobId: "dlv_typed2.1" })).rejects.toThrow(
      "queue forward is not the delivery queue",
    );
    expect(await forward.count()).toBe(0);
  });
});
