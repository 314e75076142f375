import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { poolOf } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { type Seeded, seedAddress, seedDomain, seedEndpoint, simpleMessage } from "@mailroom/testing";
import pg from "pg";
import { processWithBudget } from "../src/attempts.ts";
import { createParser, type Parser } from "../src/parse.ts";
import type { ProcessDeps } from "../src/process.ts";
import { createShield } from "../src/shield.ts";
import { storeEmail } from "../src/store.ts";
import { storeInBatches } from "../src/store-batch.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const noDns = async () => {
  throw Object.assign(new Error("no DNS in this test"), { code: "ENOTFOUND" });
};

/**
 * Issue 13: one email used to cost ~20 SQL statements one after another, then six. The load step is
 * one statement (try counted, recipient, spool, routing, rules and, for a message up to 256 KiB, its
 * raw bytes), and the store a transaction of four statements (BEGIN, the duplicate lock, one
 * statement, COMMIT) written together on a pipelined connection: two round trips. Counted at the
 * driver: every query node-postgres sends, Prisma's included, and whether it went out pipelined
 * (a run of pipelined queries is one round trip).
 */
describe("statements per email", () => {
  let p: Pipeline;
  let d: Seeded;
  let endpointId: string;
  let deps: ProcessDeps;
  let parser: Parser;
  let sent: { text: string; pipelined: boolean }[] = [];
  /** Round trips: each query sent alone, plus one per run of pipelined queries. */
  const roundTrips = () => sent.filter((q, i) => !q.pipelined || !sent[i - 1]?.pipelined).length;
  const query = pg.Client.prototype.query;

  beforeAll(async () => {
    p = await startPipeline({ engine: false });
    d = await seedDomain(p.prisma, "counted.example");
    endpointId = await seedEndpoint(p.prisma, d.accountId, "http://127.0.0.1:9/hook");
    await seedAddress(p.prisma, d, "in", { endpointId });
    parser = createParser();
    deps = {
      prisma: p.prisma,
      deliveryQueue: p.deliveryQueue,
      logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
      resolver: noDns,
      mtaHostname: "mx.mailroom.test",
      parser,
      shield: createShield(p.prisma),
    };
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const q = args[0] as string | { text: string };
      sent.push({
        text: typeof q === "string" ? q : q.text,
        pipelined: (this as pg.Client & { pipeline?: boolean }).pipeline === true,
      });
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pg.Client.prototype.query;
  });
  afterAll(async () => {
    pg.Client.prototype.query = query;
    await parser?.close();
    await p?.stop();
  });

  const accept = async (subject: string, body?: string) => {
    const r = await p.sendRaw(
      "a@sender.example",
      ["in@counted.example"],
      simpleMessage("a@sender.example", "in@counted.example", subject, body),
    );
    expect(r.response).toMatch(/^250 /);
    const rcpt = await p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
    await (await p.queue.getJob(rcpt.id))?.remove();
    return rcpt.id;
  };

  it("a stored email with a delivery takes two round trips (five statements), and its rows are all there", async () => {
    const rcptId = await accept("counted");
    sent = [];
    const result = await processWithBudget(deps, rcptId);
    expect(result).toMatchObject({ outcome: "stored" });
    expect(sent.map((q) => [q.text.trim().split(/\s+/).slice(0, 2).join(" "), q.pipelined])).toEqual([
      ["WITH try", false],
      ["BEGIN", true],
      ["SELECT pg_advisory_xact_lock(hashtextextended($1,", true],
      ["WITH same", true],
      ["COMMIT", true],
    ]);
    expect(roundTrips()).toBe(2);
    const email = await p.prisma.email.findFirstOrThrow({
      where: { spoolRecipientId: rcptId },
      include: { deliveries: true, thread: true, spoolRecipient: true },
    });
    expect(email).toMatchObject({ subject: "counted", recipient: "in@counted.example", direction: "inbound" });
    expect(email.deliveries.map((x) => [x.endpointId, x.status, x.maxAttempts > 0])).toEqual([
      [endpointId, "pending", true],
    ]);
    expect(email.thread.subject).toBe("counted");
    expect(email.spoolRecipient).toMatchObject({ status: "stored", attempts: 1 });
    expect((await p.deliveryQueue.getJob(`${email.deliveries[0]!.id}.1`))?.data).toEqual({
      deliveryId: email.deliveries[0]!.id,
      endpointId: email.deliveries[0]!.endpointId,
    });
  });

  it("a message over 256 KiB is read by the byte store after the load: one round trip more, stored whole", async () => {
    const line = `${"x".repeat(998)}\r\n`;
    const body = line.repeat(300); // 300,000 bytes
    const rcptId = await accept("big one", body);
    sent = [];
    expect(await processWithBudget(deps, rcptId)).toMatchObject({ outcome: "stored" });
    expect(sent.length).toBe(6);
    expect(roundTrips()).toBe(3);
    const email = await p.prisma.email.findFirstOrThrow({ where: { spoolRecipientId: rcptId } });
    expect(email.subject).toBe("big one");
    expect(email.textBody?.replace(/\r?\n/g, "")).toBe("x".repeat(998 * 300));
  });

  it("a Message-ID with quotes and backslashes: stored once, then recorded as a duplicate", async () => {
    const raw =
      "From: a@sender.example\r\nTo: in@counted.example\r\nSubject: quoted id\r\n" +
      "Message-ID: <o'brien\\\\'';--\\x@client.example>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\nsame body\r\n";
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await p.sendRaw("a@sender.example", ["in@counted.example"], raw);
      expect(r.response).toMatch(/^250 /);
      const rcpt = await p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
      await (await p.queue.getJob(rcpt.id))?.remove();
      ids.push(rcpt.id);
    }
    const first = await processWithBudget(deps, ids[0]!);
    expect(first).toMatchObject({ outcome: "stored" });
    expect(await processWithBudget(deps, ids[1]!)).toEqual({
      outcome: "duplicate",
      emailId: (first as { emailId: string }).emailId,
    });
    const email = await p.prisma.email.findFirstOrThrow({ where: { spoolRecipientId: ids[0]! } });
    expect(email.messageId).toBe("<o'brien\\\\'';--\\x@client.example>");
  });

  /** What process.ts would hand to the store for an accepted recipient, with `accountId` to override. */
  const storeInputFor = async (rcptId: string, accountId: string, messageId: string) => {
    const rcpt = await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId }, include: { spool: true } });
    return {
      row: {
        accountId,
        domainId: null,
        addressId: null,
        recipient: rcpt.recipient,
        plusTag: null,
        spamVerdict: "GRAY",
        spamScore: null,
        spfVerdict: "GRAY",
        dkimVerdict: "GRAY",
        dmarcVerdict: "GRAY",
        virusVerdict: "GRAY",
        virusSignature: null,
        arcVerdict: "GRAY",
        dmarcOverridden: false,
        verdictReasons: { virus: null, arc: null, dmarc: null },
        shieldRuleId: null,
        shieldAction: null,
        contentHash: "0".repeat(64),
        sanitized: [],
        spoolId: rcpt.spoolId,
        spoolRecipientId: rcptId,
        receivedAt: rcpt.spool.receivedAt,
        traceparent: null,
      },
      email: {
        messageId,
        messageIdPresent: true,
        inReplyTo: null,
        references: [],
        fromAddress: "a@sender.example",
        fromName: null,
        toAddresses: ["in@counted.example"],
        ccAddresses: [],
        replyTo: [],
        subject: messageId,
        textBody: "x",
        strippedText: "x",
        htmlBody: "",
        headers: [],
        attachments: [],
      },
      endpointIds: [endpointId],
      duplicateSince: new Date(0),
    };
  };

  it("a store that fails inside the pipelined transaction writes nothing, and the pool goes on working", async () => {
    const rcptId = await accept("rolled back");
    // No such account: the claim of the recipient and the thread insert run first, then the
    // foreign keys fail at the end of the statement, after the lock and before the COMMIT.
    const input = await storeInputFor(rcptId, "acc_not_there", "<rolled-back@client.example>");
    await expect(storeEmail(poolOf(p.prisma), input)).rejects.toMatchObject({ code: "23503" });
    expect((await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } })).status).toBe("pending");
    expect(await p.prisma.thread.count({ where: { accountId: "acc_not_there" } })).toBe(0);
    expect(await p.prisma.email.count({ where: { spoolRecipientId: rcptId } })).toBe(0);
    // The same recipient, processed for real on the same pool afterwards: stored once.
    expect(await processWithBudget(deps, rcptId)).toMatchObject({ outcome: "stored" });
    expect(await p.prisma.email.count({ where: { spoolRecipientId: rcptId } })).toBe(1);
  });

  it("stores asked for while one is in flight share the next transaction: one round trip, one commit", async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await accept(`together ${i}`));
    const inputs = await Promise.all(
      ids.map((id, i) => storeInputFor(id, d.accountId, `<together${i}@client.example>`)),
    );
    const store = storeInBatches(poolOf(p.prisma));
    sent = [];
    const results = await Promise.all(inputs.map((input) => store(input)));
    expect(results.map((r) => r.kind)).toEqual(["stored", "stored", "stored", "stored", "stored"]);
    // The first alone (nothing was in flight), the four asked for meanwhile in the next.
    const words = sent.map((q) => q.text.trim().split(/\s+/)[0]);
    expect(words).toEqual([
      "BEGIN",
      "SELECT",
      "WITH",
      "COMMIT",
      "BEGIN",
      "SELECT", // the four duplicate locks, in one statement
      ...Array(4).fill("WITH"),
      "COMMIT",
    ]);
    // Each transaction written at once on a pipelined connection: one round trip each.
    expect(sent.every((q) => q.pipelined)).toBe(true);
    expect(await p.prisma.spoolRecipient.count({ where: { id: { in: ids }, status: "stored" } })).toBe(5);
  });

  it("a store that fails in a shared transaction fails alone: the others are stored, each in its own", async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await accept(`shared ${i}`));
    const inputs = await Promise.all(
      ids.map((id, i) => storeInputFor(id, i === 1 ? "acc_not_there" : d.accountId, `<shared${i}@client.example>`)),
    );
    const store = storeInBatches(poolOf(p.prisma));
    const results = await Promise.allSettled(inputs.map((input) => store(input)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: "23503" });
    const statuses = await Promise.all(
      ids.map(async (id) => (await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id } })).status),
    );
    expect(statuses).toEqual(["stored", "pending", "stored"]);
    expect(await p.prisma.email.count({ where: { spoolRecipientId: { in: ids } } })).toBe(2);
  });

  it("a block rule: the load (raw bytes included), one statement for the block record and one for the purge", async () => {
    await p.prisma.shieldRule.create({
      data: {
        id: "rule_counted_block",
        accountId: d.accountId,
        name: "no spam subjects",
        action: "block",
        priority: 1,
        conditions: [{ field: "subject", operator: "contains", value: "buy now" }],
        endpointIds: [],
      },
    });
    try {
      const rcptId = await accept("buy now");
      const { spoolId } = await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } });
      sent = [];
      expect(await processWithBudget(deps, rcptId)).toEqual({ outcome: "blocked", ruleId: "rule_counted_block" });
      expect(sent.length).toBe(3);
      expect(roundTrips()).toBe(3);
      expect(await p.prisma.blockRecord.count({ where: { ruleId: "rule_counted_block", subject: "buy now" } })).toBe(1);
      // The raw bytes are purged, and the recipient row with them (cascade).
      expect(await p.prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(0);
      expect(await p.prisma.spoolRecipient.count({ where: { id: rcptId } })).toBe(0);
    } finally {
      await p.prisma.shieldRule.delete({ where: { id: "rule_counted_block" } });
    }
  });
});
