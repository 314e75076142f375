import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma } from "@mailroom/db";
import { createQueue, createRedis } from "@mailroom/queues";
import { waitFor } from "@mailroom/testing";
import { sendOnce, simpleMessage } from "./clients.ts";
import { type IngestEnv, ingestEnv, type Seeded, seedAddress, seedDomain } from "./harness.ts";
import { sparePort, startThrowawayRedis, type ThrowawayRedis } from "./throwaway.ts";

/**
 * `451 4.3.0` whenever Postgres or Redis cannot durably take the message, with nothing half-written:
 * no spool row, no usage counted. Only throwaway servers are stopped, never the shared ones.
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

  it("Redis down at DATA: 451 4.3.0, the spool row rolled back; Redis back: 250 again", async () => {
    const conn = createRedis(redis.url, "producer");
    conn.on("error", () => undefined);
    const queue = createQueue("inbound", { connection: conn, prefix: t.env.redisPrefix });
    queue.on("error", () => undefined);
    const server = await t.start({ queue });
    ingest = server.port;
    try {
      expect((await mail()).response).toMatch(/^250 2\.0\.0 /);
      const spooled = await t.prisma.spooledMessage.count();
      const usage = () => t.prisma.usageCounter.findFirstOrThrow({ where: { accountId: d.accountId } });
      const counted = (await usage()).received;

      await redis.stop();
      const r = await mail();
      expect(r.ok).toBe(false);
      expect(r.response).toMatch(/^451 4\.3\.0 /);
      expect(await t.prisma.spooledMessage.count()).toBe(spooled);
      expect((await usage()).received).toBe(counted);

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
