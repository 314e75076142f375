import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma, newId, type PrismaClient } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { enqueue } from "@mailroom/queues";
import type { PgProxy } from "@mailroom/testing";
import { seedAddress, seedDomain, simpleMessage, startPgProxy, waitFor } from "@mailroom/testing";
import { processRecipient } from "../src/process.ts";
import { purgeUnusedSpools } from "../src/sweeper.ts";
import { type RuleEngine, startRuleEngine } from "../src/worker.ts";
import { useDrivenPipeline } from "./driven.ts";
import { noDns } from "./pipeline.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

/**
 * What the rule engine leaves behind after a crash or a deletion at the wrong moment: nothing stuck,
 * nothing kept that should have been purged. The engine does not run on its own here (no worker):
 * each test drives the state a crash leaves and then the code path that must clean it up.
 */
describe("rule engine durability", () => {
  const t = useDrivenPipeline("durable.example");

  /** Accepted over SMTP; its inbound job is removed again so nothing but the test touches it. */
  const accept = async (to: string, subject = `s-${Math.random()}`) => {
    const r = await t.p.sendRaw("a@sender.example", [to], simpleMessage("a@sender.example", to, subject));
    expect(r.response).toMatch(/^250 /);
    const rcpt = await t.p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
    await (await t.p.queue.getJob(rcpt.id))?.remove();
    return { spoolId: r.spoolId!, rcptId: rcpt.id };
  };

  /** The block transaction committed (verdict + block record) and the process died before the purge. */
  const blockedThenCrashed = async (rcptId: string) => {
    await t.p.prisma.$transaction([
      t.p.prisma.spoolRecipient.update({ where: { id: rcptId }, data: { status: "blocked", processedAt: new Date() } }),
      t.p.prisma.blockRecord.create({
        data: {
          id: newId("block"),
          accountId: t.d.accountId,
          ruleName: "r",
          sender: "a@sender.example",
          recipient: "in@durable.example",
          subject: "x",
          receivedAt: new Date(),
        },
      }),
    ]);
  };

  it("a blocked message whose purge was cut short is purged when its job runs again", async () => {
    const { spoolId, rcptId } = await accept("in@durable.example");
    await blockedThenCrashed(rcptId);
    expect(await processRecipient(t.deps, rcptId)).toEqual({ outcome: "skipped", reason: "already blocked" });
    expect(await t.p.prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(0);
  });

  it("…and by the sweeper when its job is gone too; spools still needed are left alone", async () => {
    const blocked = await accept("in@durable.example");
    await blockedThenCrashed(blocked.rcptId);
    const pending = await accept("in@durable.example");
    const stored = await accept("in@durable.example");
    expect(await processRecipient(t.deps, stored.rcptId)).toMatchObject({ outcome: "stored" });

    expect(await purgeUnusedSpools(t.p.prisma, logger, { olderThanMs: 0 })).toBeGreaterThanOrEqual(1);
    expect(await t.p.prisma.spooledMessage.count({ where: { id: blocked.spoolId } })).toBe(0);
    expect(await t.p.prisma.spooledMessage.count({ where: { id: pending.spoolId } })).toBe(1);
    expect(await t.p.prisma.spooledMessage.count({ where: { id: stored.spoolId } })).toBe(1);
    // Young spools are not touched: a message just committed may be mid-processing.
    await blockedThenCrashed(pending.rcptId);
    expect(await purgeUnusedSpools(t.p.prisma, logger, { olderThanMs: 3_600_000 })).toBe(0);
    expect(await t.p.prisma.spooledMessage.count({ where: { id: pending.spoolId } })).toBe(1);
  });

  it("an address deleted while its mail waited: the mail is stored without it, not retried for ever", async () => {
    const addressId = await seedAddress(t.p.prisma, t.d, "leaving", { endpointId: t.endpointId });
    const { spoolId, rcptId } = await accept("leaving@durable.example");
    await t.p.prisma.address.delete({ where: { id: addressId } });
    expect(await processRecipient(t.deps, rcptId)).toMatchObject({ outcome: "stored" });
    const email = await t.p.prisma.email.findFirstOrThrow({ where: { spoolId }, include: { deliveries: true } });
    expect(email).toMatchObject({ addressId: null, domainId: t.d.domainId, deliveries: [] });
  });

  it("a domain deleted while its mail waited: stored without domain or address", async () => {
    const other = await seedDomain(t.p.prisma, "short-lived.example", { accountId: t.d.accountId });
    await seedAddress(t.p.prisma, other, "in", { endpointId: t.endpointId });
    const { spoolId, rcptId } = await accept("in@short-lived.example");
    await t.p.prisma.domain.delete({ where: { id: other.domainId } });
    expect(await processRecipient(t.deps, rcptId)).toMatchObject({ outcome: "stored" });
    const email = await t.p.prisma.email.findFirstOrThrow({ where: { spoolId }, include: { deliveries: true } });
    expect(email).toMatchObject({ addressId: null, domainId: null, accountId: t.d.accountId, deliveries: [] });
  });

  it("an account deleted while its mail waited: dropped and its bytes purged", async () => {
    const gone = await seedDomain(t.p.prisma, "gone-account.example");
    await seedAddress(t.p.prisma, gone, "in");
    const { spoolId, rcptId } = await accept("in@gone-account.example");
    await t.p.prisma.account.delete({ where: { id: gone.accountId } });
    expect(await processRecipient(t.deps, rcptId)).toEqual({ outcome: "skipped", reason: "account deleted" });
    expect(await t.p.prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(0);
  });

  describe("Postgres unreachable while the engine runs", () => {
    let proxy: PgProxy;
    let proxied: PrismaClient;
    let engine: RuleEngine | null = null;
    beforeAll(async () => {
      proxy = await startPgProxy(t.p.env.databaseUrl);
      proxied = createPrisma(proxy.url, { max: 2 });
    });
    afterAll(async () => {
      await engine?.close();
      await proxied?.$disconnect().catch(() => undefined);
      await proxy?.close();
    });

    it("a job that used up its attempts while Postgres was down is re-queued by the sweeper and stored once", async () => {
      const { spoolId, rcptId } = await accept("in@durable.example");
      // The catalog's budget (8 attempts, minutes of backoff) shrunk to 2 quick ones for the test.
      await enqueue(
        t.p.queue,
        "inbound",
        { spoolRecipientId: rcptId },
        { jobId: rcptId, attempts: 2, backoff: { type: "fixed", delay: 10 } },
      );
      proxy.down();
      engine = startRuleEngine({
        prisma: proxied,
        logger,
        deliveryQueue: t.p.deliveryQueue,
        inboundQueue: t.p.queue,
        connection: t.p.workerRedis,
        prefix: t.p.env.redisPrefix,
        concurrency: 1,
        sweepIntervalMs: 200,
        sweepAfterMs: 0,
        resolver: noDns,
        mtaHostname: "mx.mailroom.test",
        parser: t.p.parser,
      });
      await waitFor(async () => (await t.p.queue.getJob(rcptId))?.isFailed(), { what: "the job to fail for good" });
      expect((await t.p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } })).status).toBe("pending");

      proxy.up();
      await t.p.processed(spoolId);
      const emails = await t.p.prisma.email.findMany({ where: { spoolId }, include: { deliveries: true } });
      expect(emails).toHaveLength(1);
      expect(emails[0]!.deliveries).toHaveLength(1);
      // An outage is not a poison message: processed normally, and no try counted while it lasted.
      expect(emails[0]!.spamVerdict).not.toBe("PROCESSING_FAILED");
      expect(emails[0]!.spfVerdict).not.toBe("PROCESSING_FAILED");
      expect((await t.p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } })).attempts).toBe(1);
    }, 60_000);
  });
});
