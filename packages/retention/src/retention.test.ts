import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma, newId, type PrismaClient, poolOf } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { createTestEnv, type TestEnv, waitFor } from "@mailroom/testing";
import pg from "pg";
import type { ByteRef, ByteStore } from "./byte-store.ts";
import { DAY, fixtures } from "./fixtures.ts";
import { purgeAccount, purgeExpired } from "./purge.ts";
import { RETENTION_LOCK_KEY, runRetentionPass } from "./scheduler.ts";

/**
 * The retention pass against a real Postgres with an injected clock: rows are written with
 * receivedAt relative to a fixed "now", and the pass runs at that "now" — nothing waits for time.
 */
const NOW = new Date("2026-06-01T12:00:00.000Z");
const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

let env: TestEnv;
let prisma: PrismaClient;
let pool: pg.Pool;
let f: ReturnType<typeof fixtures>;

beforeAll(async () => {
  env = await createTestEnv();
  prisma = createPrisma(env.databaseUrl);
  pool = poolOf(prisma);
  f = fixtures(prisma, NOW);
});

afterAll(async () => {
  await prisma?.$disconnect();
  await env?.cleanup();
});

const recording = (): ByteStore & { refs: ByteRef[] } => {
  const refs: ByteRef[] = [];
  return { refs, delete: async (r) => void refs.push(...r) };
};
const ids = async (table: string, column: string, values: string[]) =>
  (await pool.query<{ id: string }>(`SELECT id FROM ${table} WHERE "${column}" = ANY($1::text[])`, [values])).rows
    .map((r) => r.id)
    .sort();

describe("retention pass", () => {
  it("deletes exactly the expired emails, raw MIME, attachments, deliveries, attempts and blocks", async () => {
    const a = await f.account(30);
    const keepForever = await f.account(null);
    const week = await f.account(7);
    const bytes = (tag: string) => Buffer.from(`${tag}:`.repeat(5000));

    // Account a (30 days): one message alone in its thread, with everything hanging off it.
    const oldSpool = await f.spool(bytes("old-raw"), 40);
    const old = await f.email({
      account: a,
      days: 40,
      spoolId: oldSpool,
      attachment: bytes("old-att"),
      delivery: "delivered",
      attempts: 2,
    });
    // An old message and a recent reply in one thread: the thread stays, with the reply.
    const mixedThread = await f.thread(a.id, 3);
    const oldInMixed = await f.email({ account: a, days: 35, threadId: mixedThread, delivery: "dead", attempts: 5 });
    const recentReply = await f.email({ account: a, days: 3, threadId: mixedThread });
    // Just inside retention (29 days), with bytes that must survive byte-identical.
    const keptSpool = await f.spool(bytes("kept-raw"), 29);
    const kept = await f.email({ account: a, days: 29, spoolId: keptSpool, attachment: bytes("kept-att") });
    // Expired, but a delivery is still retrying, and an outbound message still waits for the relay.
    const retrying = await f.email({ account: a, days: 40, delivery: "retrying", attempts: 1 });
    const queuedOut = await f.email({ account: a, days: 40, sendStatus: "queued" });
    // One raw message accepted for a and for the keep-forever account: the raw bytes stay for the latter.
    const sharedSpool = await f.spool(bytes("shared-raw"), 45);
    const sharedA = await f.email({ account: a, days: 45, spoolId: sharedSpool });
    const sharedForever = await f.email({ account: keepForever, days: 45, spoolId: sharedSpool });
    const oldBlock = await f.block(a.id, 31);
    const newBlock = await f.block(a.id, 10);

    // Keep-forever account: years-old mail and blocks stay.
    const ancient = await f.email({ account: keepForever, days: 800, attachment: bytes("ancient"), delivery: "dead" });
    const ancientBlock = await f.block(keepForever.id, 800);

    // 7-day account: 8 days goes, 6 days stays.
    const weekOld = await f.email({ account: week, days: 8, attachment: bytes("week-old") });
    const weekNew = await f.email({ account: week, days: 6 });

    const store = recording();
    const stats = await purgeExpired({ pool, now: NOW, batchSize: 100, bytes: store });

    const allEmails = [old, oldInMixed, recentReply, kept, retrying, queuedOut, sharedA, sharedForever, ancient]
      .concat([weekOld, weekNew])
      .map((e) => e.id);
    expect(await ids("emails", "id", allEmails)).toEqual(
      [recentReply, kept, retrying, queuedOut, sharedForever, ancient, weekNew].map((e) => e.id).sort(),
    );
    expect(await ids("spooled_messages", "id", [oldSpool, keptSpool, sharedSpool])).toEqual(
      [keptSpool, sharedSpool].sort(),
    );
    expect(await ids("attachments", "emailId", allEmails)).toEqual(
      [kept.attachmentId, ancient.attachmentId].map(String).sort(),
    );
    expect(await ids("deliveries", "emailId", allEmails)).toEqual(
      [retrying.deliveryId, ancient.deliveryId].map(String).sort(),
    );
    const attempts = await pool.query<{ deliveryId: string }>(
      `SELECT "deliveryId" FROM delivery_attempts WHERE "deliveryId" = ANY($1::text[])`,
      [[old.deliveryId, oldInMixed.deliveryId, retrying.deliveryId]],
    );
    expect(attempts.rows.map((r) => r.deliveryId)).toEqual([retrying.deliveryId]);
    expect(await ids("block_records", "accountId", [a.id, keepForever.id])).toEqual([newBlock, ancientBlock].sort());
    expect(await ids("block_records", "id", [oldBlock])).toEqual([]);

    // Threads: the lone message's went with it; the mixed one stays with its reply, still the latest.
    expect(await ids("threads", "id", [old.threadId, mixedThread, weekOld.threadId])).toEqual([mixedThread]);
    const thread = await prisma.thread.findUniqueOrThrow({ where: { id: mixedThread } });
    expect(thread.lastMessageAt.getTime()).toBe(NOW.getTime() - 3 * DAY);
    expect((await prisma.email.findMany({ where: { threadId: mixedThread } })).map((e) => e.id)).toEqual([
      recentReply.id,
    ]);

    // Bytes that stay are untouched.
    const keptAtt = await prisma.attachment.findUniqueOrThrow({ where: { id: String(kept.attachmentId) } });
    expect(Buffer.from(keptAtt.content ?? []).equals(bytes("kept-att"))).toBe(true);
    const keptRaw = await prisma.spooledMessage.findUniqueOrThrow({ where: { id: keptSpool } });
    expect(Buffer.from(keptRaw.raw ?? []).equals(bytes("kept-raw"))).toBe(true);

    // The byte store was asked to delete exactly the bytes whose rows went.
    const asked = store.refs.map((r) => (r.kind === "raw" ? r.spoolId : r.attachmentId)).sort();
    expect(asked).toEqual([oldSpool, String(old.attachmentId), String(weekOld.attachmentId)].sort());

    expect(stats).toMatchObject({
      emails: 4,
      attachments: 2,
      rawMessages: 1,
      deliveries: 2,
      deliveryAttempts: 7,
      threads: 3,
      blocks: 1,
    });
    // A second pass at the same "now" finds nothing more.
    const again = await purgeExpired({ pool, now: NOW, batchSize: 100 });
    expect(again).toMatchObject({ emails: 0, attachments: 0, rawMessages: 0, threads: 0, blocks: 0 });
  });

  it("works in batches of at most batchSize rows, each committed on its own", async () => {
    const a = await f.account(30);
    for (let i = 0; i < 23; i++) await f.email({ account: a, days: 31 + i, attachment: Buffer.from(`a${i}`) });
    for (let i = 0; i < 12; i++) await f.block(a.id, 31 + i);
    const fresh = await f.email({ account: a, days: 1 });

    const batches: Record<string, number[]> = { emails: [], block_records: [] };
    const stats = await purgeAccount(
      {
        pool,
        now: NOW,
        batchSize: 5,
        onBatch: (table, n) => {
          batches[table]?.push(n);
        },
      },
      a.id,
      new Date(NOW.getTime() - 30 * DAY),
    );
    expect(batches.emails).toEqual([5, 5, 5, 5, 3]);
    expect(batches.block_records).toEqual([5, 5, 2]);
    expect(stats).toMatchObject({ emails: 23, attachments: 23, blocks: 12 });
    const left = await prisma.email.findMany({ where: { accountId: a.id } });
    expect(left.map((e) => e.id)).toEqual([fresh.id]);
  });

  it("rolls a batch back when the byte store fails, and deletes it on the next pass", async () => {
    const a = await f.account(30);
    const e = await f.email({ account: a, days: 40, attachment: Buffer.from("bytes") });
    const failing: ByteStore = {
      delete: async () => {
        throw new Error("object store unreachable");
      },
    };
    await expect(purgeAccount({ pool, now: NOW, batchSize: 10, bytes: failing }, a.id, f.ago(30))).rejects.toThrow(
      "object store unreachable",
    );
    expect(await ids("emails", "id", [e.id])).toEqual([e.id]);
    expect(await ids("attachments", "id", [String(e.attachmentId)])).toEqual([String(e.attachmentId)]);
    const store = recording();
    await purgeAccount({ pool, now: NOW, batchSize: 10, bytes: store }, a.id, f.ago(30));
    expect(await ids("emails", "id", [e.id])).toEqual([]);
    expect(store.refs).toEqual([{ kind: "attachment", attachmentId: e.attachmentId, emailId: e.id }]);
  });

  it("keeps a thread that gets a new reply while its last expired email is being deleted", async () => {
    const a = await f.account(30);
    const old = await f.email({ account: a, days: 40 });
    // Another session stores a reply into the thread (as the rule engine does) and has not committed:
    // its foreign-key check holds a key-share lock on the thread row.
    const other = new pg.Client({ connectionString: env.databaseUrl });
    await other.connect();
    try {
      await other.query("BEGIN");
      const replyId = newId("email");
      await other.query(
        `INSERT INTO emails (id, "accountId", "threadId", direction, "messageId", "fromAddress", "toAddresses",
           "ccAddresses", "replyTo", "references", subject, "textBody", "htmlBody", "spfVerdict", "dkimVerdict",
           "dmarcVerdict", "contentHash", "receivedAt")
         VALUES ($1, $2, $3, 'inbound', '<reply@x>', 'a@x', '{}', '{}', '{}', '{}', 's', 't', '', 'PASS', 'PASS',
           'PASS', 'h', $4)`,
        [replyId, a.id, old.threadId, NOW],
      );
      const pass = purgeAccount({ pool, now: NOW, batchSize: 10 }, a.id, f.ago(30));
      // The pass has deleted the old email and now waits for the thread lock.
      await waitFor(
        async () =>
          (
            await pool.query(
              `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                 AND query LIKE 'SELECT id FROM threads%'`,
            )
          ).rowCount,
        { timeoutMs: 30_000, what: "the retention pass to wait for the thread lock" },
      );
      await other.query("COMMIT");
      const stats = await pass;
      expect(stats.emails).toBe(1);
      expect(stats.threads).toBe(0);
      expect(await ids("emails", "threadId", [old.threadId])).toEqual([replyId]);
      expect(await ids("threads", "id", [old.threadId])).toEqual([old.threadId]);
    } finally {
      await other.end();
    }
  });

  it("runs one pass at a time across processes (advisory lock)", async () => {
    const a = await f.account(30);
    const e = await f.email({ account: a, days: 40 });
    const holder = new pg.Client({ connectionString: env.databaseUrl });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock($1)", [RETENTION_LOCK_KEY.toString()]);
      const opts = { pool, logger, batchSize: 10, intervalMs: 60_000, now: () => NOW };
      expect(await runRetentionPass(opts)).toEqual({ skipped: true });
      expect(await ids("emails", "id", [e.id])).toEqual([e.id]);
      await holder.query("SELECT pg_advisory_unlock($1)", [RETENTION_LOCK_KEY.toString()]);
      const result = await runRetentionPass(opts);
      expect(result.skipped).toBe(false);
      expect(await ids("emails", "id", [e.id])).toEqual([]);
    } finally {
      await holder.end();
    }
  });
});
