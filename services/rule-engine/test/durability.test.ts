import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma, newId, type PrismaClient } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { enqueue } from "@mailroom/queues";
import type { PgProxy, Seeded } from "@mailroom/testing";
import { seedAddress, seedDomain, seedEndpoint, simpleMessage, startPgProxy, waitFor } from "@mailroom/testing";
import { type ProcessDeps, processRecipient } from "../src/process.ts";
import { purgeUnusedSpools } from "../src/sweeper.ts";
import { type RuleEngine, startRuleEngine } from "../src/worker.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
const noDns = async () => {
  throw Object.assign(new Error("no DNS in this test"), { code: "ENOTFOUND" });
};

/**
 * What the rule engine leaves behind after a crash or a deletion at the wrong moment: nothing stuck,
 * nothing kept that should have been purged. The engine does not run on its own here (no worker):
 * each test drives the state a crash leaves and then the code path that must clean it up.
 */
describe("rule engine durability", () => {
  let p: Pipeline;
  let d: Seeded;
  let endpointId: string;
  let deps: ProcessDeps;

  beforeAll(async () => {
    p = await startPipeline({ engine: false });
    d = await seedDomain(p.prisma, "durable.example");
    endpointId = await seedEndpoint(p.prisma, d.accountId, "http://127.0.0.1:9/hook");
    await seedAddress(p.prisma, d, "in", { endpointId });
    deps = {
      prisma: p.prisma,
      deliveryQueue: p.deliveryQueue,
      logger,
      resolver: noDns,
      mtaHostname: "mx.mailroom.test",
      parser: p.parser,
    };
  });
  afterAll(async () => {
    await p?.stop();
  });

  /** Accepted over SMTP; its inbound job is removed again so nothing but the test touches it. */
  const accept = async (to: string, subject = `s-${Math.random()}`) => {
    const r = await p.sendRaw("a@sender.example", [to], simpleMessage("a@sender.example", to, subject));
    expect(r.response).toMatch(/^250 /);
    const rcpt = await p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
    await (await p.queue.getJob(rcpt.id))?.remove();
    return { spoolId: r.spoolId!, rcptId: rcpt.id };
  };

  /** The block transaction committed (verdict + block record) and the process died before the purge. */
  const blockedThenCrashed = async (rcptId: string) => {
    await p.prisma.$transaction([
      p.prisma.spoolRecipient.update({ where: { id: rcptId }, data: { status: "blocked", processedAt: new Date() } }),
      p.prisma.blockRecord.create({
        data: {
          id: newId("block"),
          accountId: d.accountId,
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
    expect(await processRecipient(deps, rcptId)).toEqual({ outcome: "skipped", reason: "already blocked" });
    expect(await p.prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(0);
  });

  it("…and by the sweeper when its job is gone too; spools still needed are left alone", async () => {
    const blocked = await accept("in@durable.example");
    await blockedThenCrashed(blocked.rcptId);
    const pending = await accept("in@durable.example");
    const stored = await accept("in@durable.example");
    expect(await processRecipient(deps, stored.rcptId)).toMatchObject({ outcome: "stored" });

    expect(await purgeUnusedSpools(p.prisma, logger, { olderThanMs: 0 })).toBeGreaterThanOrEqual(1);
    expect(await p.prisma.spooledMessage.count({ where: { id: blocked.spoolId } })).toBe(0);
    expect(await p.prisma.spooledMessage.count({ where: { id: pending.spoolId } })).toBe(1);
    expect(await p.prisma.spooledMessage.count({ where: { id: stored.spoolId } })).toBe(1);
    // Young spools are not touched: a message just committed may be mid-processing.
    await blockedThenCrashed(pending.rcptId);
    expect(await purgeUnusedSpools(p.prisma, logger, { olderThanMs: 3_600_000 })).toBe(0);
    expect(await p.prisma.spooledMessage.count({ where: { id: pending.spoolId } })).toBe(1);
  });

  it("an address deleted while its mail waited: the mail is stored without it, not retried for ever", async () => {
    const addressId = await seedAddress(p.prisma, d, "leaving", { endpointId });
    const { spoolId, rcptId } = await accept("leaving@durable.example");
    await p.prisma.address.delete({ where: { id: addressId } });
    expect(await processRecipient(deps, rcptId)).toMatchObject({ outcome: "stored" });
    const email = await p.prisma.email.findFirstOrThrow({ where: { spoolId }, include: { deliveries: true } });
    expect(email).toMatchObject({ addressId: null, domainId: d.domainId, deliveries: [] });
  });

  it("a domain deleted while its mail waited: stored without domain or address", async () => {
    const other = await seedDomain(p.prisma, "short-lived.example", { accountId: d.accountId });
    await seedAddress(p.prisma, other, "in", { endpointId });
    const { spoolId, rcptId } = await accept("in@short-lived.example");
    await p.prisma.domain.delete({ where: { id: other.domainId } });
    expect(await processRecipient(deps, rcptId)).toMatchObject({ outcome: "stored" });
    const email = await p.prisma.email.findFirstOrThrow({ where: { spoolId }, include: { deliveries: true } });
    expect(email).toMatchObject({ addressId: null, domainId: null, accountId: d.accountId, deliveries: [] });
  });

  it("an account deleted while its mail waited: dropped and its bytes purged", async () => {
    const gone = await seedDomain(p.prisma, "gone-account.example");
    await seedAddress(p.prisma, gone, "in");
    const { spoolId, rcptId } = await accept("in@gone-account.example");
    await p.prisma.account.delete({ where: { id: gone.accountId } });
    expect(await processRecipient(deps, rcptId)).toEqual({ outcome: "skipped", reason: "account deleted" });
    expect(await p.prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(0);
  });

  describe("Postgres unreachable while the engine runs", () => {
    let proxy: PgProxy;
    let proxied: PrismaClient;
    let engine: RuleEngine | null = null;
    beforeAll(async () => {
      proxy = await startPgProxy(p.env.databaseUrl);
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
        p.queue,
        "inbound",
        { spoolRecipientId: rcptId },
        { jobId: rcptId, attempts: 2, backoff: { type: "fixed", delay: 10 } },
      );
      proxy.down();
      engine = startRuleEngine({
        prisma: proxied,
        logger,
        deliveryQueue: p.deliveryQueue,
        inboundQueue: p.queue,
        connection: p.workerRedis,
        prefix: p.env.redisPrefix,
        concurrency: 1,
        sweepIntervalMs: 200,
        sweepAfterMs: 0,
        resolver: noDns,
        mtaHostname: "mx.mailroom.test",
        parser: p.parser,
      });
      await waitFor(async () => (await p.queue.getJob(rcptId))?.isFailed(), { what: "the job to fail for good" });
      expect((await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } })).status).toBe("pending");

      proxy.up();
      await p.processed(spoolId);
      const emails = await p.prisma.email.findMany({ where: { spoolId }, include: { deliveries: true } });
      expect(emails).toHaveLength(1);
      expect(emails[0]!.deliveries).toHaveLength(1);
      // An outage is not a poison message: processed normally, and no try counted while it lasted.
      expect(emails[0]!.spamVerdict).not.toBe("PROCESSING_FAILED");
      expect(emails[0]!.spfVerdict).not.toBe("PROCESSING_FAILED");
      expect((await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } })).attempts).toBe(1);
    }, 60_000);
  });
});
