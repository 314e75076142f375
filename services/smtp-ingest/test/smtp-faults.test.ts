import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { monthKey } from "@mailroom/core";
import { createPrisma, migrate, migrationsDir, monthlyReceived } from "@mailroom/db";
import { createQueue, createRedis } from "@mailroom/queues";
import { type IngestEnv, ingestEnv } from "@mailroom/stack";
import {
  connect,
  type Seeded,
  seedAddress,
  seedDomain,
  send,
  sendOnce,
  simpleMessage,
  sparePort,
  startThrowawayPostgres,
  startThrowawayRedis,
  type ThrowawayPostgres,
  type ThrowawayRedis,
  waitFor,
} from "@mailroom/testing";

/**
 * `451 4.3.0` whenever Postgres cannot durably take the message, with nothing half-written: no spool
 * row, no usage counted. Redis is not needed for that (it carries only the wake-up of the rule
 * engine), so with Redis down mail is still accepted. Only throwaway servers are stopped, never the
 * shared ones.
 */
describe("smtp-ingest when a dependency is down", () => {
  let t: IngestEnv;
  let d: Seeded;
  let redis: ThrowawayRedis;

  beforeAll(async () => {
    t = await ingestEnv();
    d = await seedDomain(t.prisma, "faults.example");
    await seedAddress(t.prisma, d, "support");
    redis = await startThrowawayRedis();
  });
  afterAll(async () => {
    await redis?.stop();
    await t?.close();
  });

  const mail = () =>
    sendOnce(
      { port: ingest },
      { from: "a@sender.example", to: ["support@faults.example"] },
      simpleMessage("a@sender.example", "support@faults.example"),
    );
  let ingest = 0;

  it("Redis down at DATA: still 250, the message committed and its recipient pending; Redis back: jobs again", async () => {
    const conn = createRedis(redis.url, "producer");
    conn.on("error", () => undefined);
    const queue = createQueue("inbound", { connection: conn, prefix: t.env.redisPrefix });
    queue.on("error", () => undefined);
    const server = await t.start({ queue });
    ingest = server.port;
    try {
      expect((await mail()).response).toMatch(/^250 2\.0\.0 /);
      const spooled = await t.prisma.spooledMessage.count();
      const usage = () => monthlyReceived(t.prisma, d.accountId, monthKey(new Date()));
      const counted = await usage();

      // The committed pending recipient is the rule engine's work item (its sweeper queues rows
      // whose job never came: rule-engine/test/crash.test.ts); Redis only carries the wake-up.
      await redis.stop();
      const r = await mail();
      expect(r.response).toMatch(/^250 2\.0\.0 /);
      const downId = /queued as (spl_\w+)/.exec(r.response)![1]!;
      expect(await t.prisma.spooledMessage.count()).toBe(spooled + 1);
      expect(await usage()).toBe(counted + 1);
      expect(await t.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: downId } })).toMatchObject({
        status: "pending",
      });

      await redis.start();
      await waitFor(async () => conn.status === "ready", { what: "the producer to reconnect" });
      const again = await mail();
      expect(again.response).toMatch(/^250 2\.0\.0 /);
      const spoolId = /queued as (spl_\w+)/.exec(again.response)![1]!;
      const rcpt = await t.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId } });
      expect(await queue.getJob(rcpt.id)).toBeTruthy();
    } finally {
      await server.close();
      await queue.close().catch(() => undefined);
      conn.disconnect();
    }
  });

  it("Postgres unreachable: 451 4.3.0 at RCPT, nothing accepted", async () => {
    const dead = await sparePort();
    const prisma = createPrisma(`postgresql://postgres@127.0.0.1:${dead}/nowhere`, { max: 1 });
    const server = await t.start({ prisma });
    ingest = server.port;
    try {
      const r = await mail();
      expect(r.ok).toBe(false);
      expect(r.rejectedErrors[0]?.response).toMatch(/^451 4\.3\.0 /);
    } finally {
      await server.close();
      await prisma.$disconnect().catch(() => undefined);
    }
  });
});

describe("smtp-ingest when Postgres dies during DATA", () => {
  let pg: ThrowawayPostgres | null = null;
  let t: IngestEnv;
  beforeAll(async () => {
    t = await ingestEnv();
    pg = await startThrowawayPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.stop();
    await t?.close();
  });

  it("451 4.3.0 when the spool cannot be written, and no job is queued", async () => {
    const url = pg!.url("mailroom_fault");
    await migrate(url, migrationsDir);
    const prisma = createPrisma(url, { max: 2 });
    const d = await seedDomain(prisma, "pgfault.example");
    await seedAddress(prisma, d, "support");
    const server = await t.start({ prisma });
    try {
      // RCPT is decided while Postgres is up; it goes down once the client has begun sending DATA.
      const body = new PassThrough();
      const conn = await connect({ port: server.port });
      const dataStarted = new Promise<void>((r) => body.once("resume", () => r()));
      const sent = send(conn, { from: "a@sender.example", to: ["support@pgfault.example"] }, body);
      await dataStarted;
      await pg!.stop();
      body.end(simpleMessage("a@sender.example", "support@pgfault.example"));
      const r = await sent;
      conn.close();
      expect(r.ok).toBe(false);
      expect(r.response).toMatch(/^451 4\.3\.0 /);
      expect(await t.queue.getJobCounts("wait", "prioritized", "active", "delayed")).toEqual({
        wait: 0,
        prioritized: 0,
        active: 0,
        delayed: 0,
      });
    } finally {
      await server.close();
      await prisma.$disconnect().catch(() => undefined);
    }
  }, 60_000);
});
