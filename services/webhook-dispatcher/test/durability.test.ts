import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { createQueue, createRedis } from "@mailroom/queues";
import {
  type PgProxy,
  seedDelivery,
  seedEndpoint,
  startPgProxy,
  startThrowawayRedis,
  waitFor,
} from "@mailroom/testing";
import { queueFirstAttempt, startDispatcherOn, startHoldingServer, useDispatchTest } from "./fixtures.ts";

/**
 * No delivery is POSTed twice for one failure of ours: not when Redis loses the job of an attempt
 * still in flight, not when Postgres goes away between the POST and its record.
 */
const t = useDispatchTest();

const settled = (id: string) =>
  waitFor(
    async () => {
      const d = await t.h.prisma.delivery.findUniqueOrThrow({ where: { id }, include: { attempts: true } });
      return d.status === "delivered" || d.status === "dead" ? d : null;
    },
    { what: `delivery ${id} settled`, timeoutMs: 30_000 },
  );

describe("an attempt in flight when Redis restarts empty", () => {
  it("is not started a second time by the sweeper while the first request is still open", async () => {
    const redis = await startThrowawayRedis();
    const worker = createRedis(redis.url, "worker");
    const producer = createRedis(redis.url, "worker");
    for (const c of [worker, producer]) c.on("error", () => undefined);
    const queue = createQueue("delivery", { connection: producer, prefix: "inflight" });
    queue.on("error", () => undefined);
    const slow = await startHoldingServer();
    const dispatcher = startDispatcherOn(
      t.h,
      { queue, worker, producer, prefix: "inflight" },
      { concurrency: 4, sweepIntervalMs: 3_600_000 },
    );
    try {
      const ep = await seedEndpoint(t.h.prisma, t.s.accountId, slow.url, { timeoutSeconds: 20 });
      const d = await seedDelivery(t.h.prisma, t.s, ep);
      await queueFirstAttempt(queue, d.id);
      await waitFor(async () => slow.held === 1, { what: "the attempt in flight" });

      // Redis forgets the running job (and the endpoint's slot); the Delivery row is all that is left.
      await redis.stop();
      await redis.start();
      await waitFor(async () => (await producer.ping().catch(() => null)) === "PONG", { what: "redis back" });
      // The row says the attempt is claimed until its lease ends: nothing is due, nothing re-queued.
      expect(await dispatcher.sweep()).toBe(0);
      expect(await queue.getJob(`${d.id}.1`)).toBeUndefined();
      expect(slow.received).toBe(1);

      slow.releaseAll();
      const done = await settled(d.id);
      expect(done.status).toBe("delivered");
      expect(done.attempts).toHaveLength(1);
      expect(slow.received).toBe(1);
    } finally {
      await dispatcher.close();
      await queue.close().catch(() => undefined);
      worker.disconnect();
      producer.disconnect();
      await slow.close();
      await redis.stop();
    }
  }, 60_000);

  it("a claimed attempt whose worker died is made once its lease runs out", async () => {
    t.receiver.requests.length = 0;
    t.receiver.respond(() => ({ status: 200 }));
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url, { timeoutSeconds: 1 });
    const d = await seedDelivery(t.h.prisma, t.s, ep);
    // What a worker killed mid-request leaves: the claim (a lease in the near future), no attempt row.
    const lease = new Date(Date.now() + 1_500);
    await t.h.prisma.delivery.update({ where: { id: d.id }, data: { nextAttemptAt: lease } });
    const dispatcher = t.h.dispatcher({ sweepGraceMs: 0 });
    try {
      expect(await dispatcher.sweep()).toBe(0); // not due while the lease lasts
      await waitFor(async () => Date.now() > lease.getTime() && (await dispatcher.sweep()) === 1, {
        what: "the lease to run out and the sweeper to re-queue",
      });
      const done = await settled(d.id);
      expect(done.status).toBe("delivered");
      expect(done.attempts).toHaveLength(1);
      expect(done.attempts[0]!.startedAt.getTime()).toBeGreaterThanOrEqual(lease.getTime());
      expect(t.receiver.requests).toHaveLength(1);
    } finally {
      await dispatcher.close();
    }
  }, 30_000);
});

describe("Postgres unreachable between the POST and its record", () => {
  let proxy: PgProxy;
  let proxied: PrismaClient;
  beforeAll(async () => {
    proxy = await startPgProxy(t.h.env.databaseUrl);
    proxied = createPrisma(proxy.url, { max: 2 });
  });
  afterAll(async () => {
    await proxied?.$disconnect().catch(() => undefined);
    await proxy?.close();
  });

  it("the attempt is recorded once Postgres is back, and the endpoint got one request", async () => {
    t.receiver.requests.length = 0;
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url);
    const d = await seedDelivery(t.h.prisma, t.s, ep);
    // The t.receiver takes the request down with it: Postgres goes away while the response is on its way.
    t.receiver.respond((_r, i) => {
      if (i > 0) return { status: 200 };
      proxy.down();
      setTimeout(() => proxy.up(), 1_500);
      return { status: 200 };
    });
    const dispatcher = t.h.dispatcher({ prisma: proxied });
    try {
      await queueFirstAttempt(t.h.queue, d.id);
      const done = await settled(d.id);
      expect(done.status).toBe("delivered");
      expect(done.attempts).toHaveLength(1);
      expect(t.receiver.requests).toHaveLength(1);
    } finally {
      t.receiver.respond(() => ({ status: 200 }));
      await dispatcher.close();
    }
  }, 60_000);
});
