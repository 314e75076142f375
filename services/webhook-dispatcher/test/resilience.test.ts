import { describe, expect, it } from "@jest/globals";
import { createQueue, createRedis, createWorker, UnrecoverableError } from "@mailroom/queues";
import { seedDelivery, seedEndpoint, startThrowawayRedis, waitFor } from "@mailroom/testing";
import { queueFirstAttempt, startDispatcherOn, startHoldingServer, useDispatchTest } from "./fixtures.ts";

/**
 * The schedule lives in the Delivery row: restarts of the dispatcher and of Redis (losing every
 * job) lose no delivery and make no extra attempt; one slow endpoint cannot take every worker slot.
 */
const t = useDispatchTest({ reply: { status: 200 } });

const row = (id: string) =>
  t.h.prisma.delivery.findUniqueOrThrow({ where: { id }, include: { attempts: { orderBy: { number: "asc" } } } });
const reached = (id: string, status: string, attemptCount: number) =>
  waitFor(
    async () => {
      const d = await row(id);
      return d.status === status && d.attemptCount === attemptCount ? d : null;
    },
    { what: `delivery ${id} ${status} after ${attemptCount} attempts`, timeoutMs: 20_000 },
  );

describe("restarts", () => {
  it("a dispatcher restarted mid-backoff makes the next attempt on schedule, once", async () => {
    t.receiver.respond((_r, i) => (i === 0 ? { status: 500 } : { status: 200 }));
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url);
    const d = await seedDelivery(t.h.prisma, t.s, ep);
    // Unit 1 s: attempt 2 is due 1 s after attempt 1, long after this dispatcher is gone.
    const first = t.h.dispatcher({ backoffUnitMs: 1_000 });
    await queueFirstAttempt(t.h.queue, d.id);
    const afterFirst = await reached(d.id, "retrying", 1);
    await first.close();
    expect(t.receiver.requests).toHaveLength(1);
    expect(afterFirst.nextAttemptAt!.getTime() - afterFirst.attempts[0]!.finishedAt.getTime()).toBe(1_000);

    const second = t.h.dispatcher({ backoffUnitMs: 1_000 });
    const done = await reached(d.id, "delivered", 2);
    await second.close();
    expect(done.attempts[1]!.startedAt.getTime()).toBeGreaterThanOrEqual(afterFirst.nextAttemptAt!.getTime() - 500);
    expect(t.receiver.requests.map((r) => r.headers["x-service-delivery-id"])).toEqual([d.id, d.id]);
  });

  it("Redis restarted without its data mid-backoff: the sweeper re-queues from the Delivery row", async () => {
    const redis = await startThrowawayRedis();
    const worker = createRedis(redis.url, "worker");
    const producer = createRedis(redis.url, "worker");
    const queue = createQueue("delivery", { connection: producer, prefix: "fault" });
    const start = () =>
      startDispatcherOn(t.h, { queue, worker, producer, prefix: "fault" }, { concurrency: 2, sweepIntervalMs: 100 });
    try {
      t.receiver.respond((_r, i) => (i === 0 ? { status: 502 } : { status: 200 }));
      const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url);
      const d = await seedDelivery(t.h.prisma, t.s, ep);
      const first = start();
      await queue.add("delivery", { deliveryId: d.id }, { jobId: `${d.id}.1` });
      await reached(d.id, "retrying", 1);
      await first.close();
      expect(await queue.getJob(`${d.id}.2`)).toBeDefined(); // the delayed job for attempt 2

      await redis.stop();
      await redis.start(); // empty: the delayed job is gone
      await waitFor(async () => (await producer.ping().catch(() => null)) === "PONG", { what: "redis back" });
      expect(await queue.getJob(`${d.id}.2`)).toBeUndefined();

      const second = start();
      const done = await reached(d.id, "delivered", 2);
      await second.close();
      expect(t.receiver.requests).toHaveLength(2);
      expect(done.attempts.map((a) => a.statusCode)).toEqual([502, 200]);
    } finally {
      await queue.close();
      worker.disconnect();
      producer.disconnect();
      await redis.stop();
    }
  });

  it("a job BullMQ gave up on (our own failure) is retried by the sweeper", async () => {
    t.receiver.respond(() => ({ status: 200 }));
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url);
    const d = await seedDelivery(t.h.prisma, t.s, ep);
    // A worker that fails every job for good, as a dispatcher would with the database gone.
    const broken = createWorker(
      "delivery",
      async () => {
        throw new UnrecoverableError("database unavailable");
      },
      { connection: t.h.worker, prefix: t.h.env.redisPrefix, concurrency: 1 },
    );
    await queueFirstAttempt(t.h.queue, d.id);
    await waitFor(async () => (await t.h.queue.getJob(`${d.id}.1`))?.isFailed(), { what: "job failed" });
    await broken.close();
    expect((await row(d.id)).status).toBe("pending");

    const dispatcher = t.h.dispatcher({ sweepGraceMs: 0 });
    expect(await dispatcher.sweep()).toBeGreaterThanOrEqual(1);
    await reached(d.id, "delivered", 1);
    await dispatcher.close();
    expect(t.receiver.requests).toHaveLength(1);
  });
});

describe("fresh budget after a manual retry", () => {
  it("restarts the backoff at 1 unit, whatever the attempt number", async () => {
    t.receiver.respond((_r, i) => (i === 0 ? { status: 500 } : { status: 200 }));
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url);
    const d = await seedDelivery(t.h.prisma, t.s, ep);
    // As POST /deliveries/{id}/retry leaves it: 4 attempts made, budget of 5 more from there.
    await t.h.prisma.delivery.update({
      where: { id: d.id },
      data: { attemptCount: 4, attemptBase: 4, maxAttempts: 9 },
    });
    const dispatcher = t.h.dispatcher({ backoffUnitMs: 1_000 });
    await t.h.queue.add("delivery", { deliveryId: d.id }, { jobId: `${d.id}.5` });
    const failed = await reached(d.id, "retrying", 5);
    // Attempt 5 overall, first of its budget: 1 unit, not the 2 h step of a fifth attempt.
    expect(failed.nextAttemptAt!.getTime() - failed.attempts[0]!.finishedAt.getTime()).toBe(1_000);
    expect(failed.attempts[0]!.number).toBe(5);
    await reached(d.id, "delivered", 6);
    await dispatcher.close();
  });
});

describe("per-endpoint concurrency", () => {
  it("a slow endpoint holds at most its limit of slots; another endpoint is still served", async () => {
    const slow = await startHoldingServer();
    try {
      const slowEp = await seedEndpoint(t.h.prisma, t.s.accountId, slow.url, { timeoutSeconds: 30 });
      const fastEp = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url);
      const slowDeliveries = [];
      for (let i = 0; i < 6; i++) slowDeliveries.push(await seedDelivery(t.h.prisma, t.s, slowEp));
      const fast = await seedDelivery(t.h.prisma, t.s, fastEp);
      const dispatcher = t.h.dispatcher({ concurrency: 4, endpointConcurrency: 2, busyRetryMs: 50 });
      for (const d of slowDeliveries) await queueFirstAttempt(t.h.queue, d.id);
      await waitFor(async () => slow.held >= 2, { what: "two requests held by the slow endpoint" });
      await queueFirstAttempt(t.h.queue, fast.id);

      await reached(fast.id, "delivered", 1);
      expect(slow.held).toBe(2);
      expect(slow.maxHeld).toBe(2);

      slow.releaseAll();
      for (const d of slowDeliveries) await reached(d.id, "delivered", 1);
      expect(slow.maxHeld).toBe(2);
      expect(slow.received).toBe(6);
      await dispatcher.close();
    } finally {
      await slow.close();
    }
  });
});
