import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { monthKey } from "@mailroom/core";
import { monthlyReceived } from "@mailroom/db";
import { Registry } from "@mailroom/observability";
import { createQueue, createRedis } from "@mailroom/queues";
import { type IngestEnv, ingestEnv } from "@mailroom/stack";
import type { Seeded, ThrowawayRedis } from "@mailroom/testing";
import { seedAddress, seedDomain, simpleMessage, splitStored, startThrowawayRedis, waitFor } from "@mailroom/testing";
import pg from "pg";
import { type RawSession, rawSession } from "./raw-session.ts";

/**
 * Group commit (accept-batch.ts): messages that finish DATA while an accepting statement is in
 * flight are written together in the next one. Each test holds the first message's statement on a
 * table lock taken by the test, waits until the others are queued behind it (the
 * mailroom_smtp_accept_waiting gauge), then lets go; so the batch is certain, not a race.
 */
describe("accepting concurrent sessions in one batch", () => {
  let t: IngestEnv;
  let holder: pg.Client;
  const month = monthKey(new Date());

  beforeAll(async () => {
    t = await ingestEnv();
    holder = new pg.Client({ connectionString: t.env.databaseUrl });
    await holder.connect();
  });
  afterAll(async () => {
    await holder?.end();
    await t?.close();
  });

  /** A session that had MAIL, RCPT and DATA accepted; `finish` sends the body and the dot. */
  async function atData(port: number, to: string): Promise<RawSession & { body: string; finish(): Promise<string> }> {
    const s = await rawSession(port);
    expect(await s.cmd("MAIL FROM:<a@sender.example>\r\n")).toMatch(/^250 /);
    expect(await s.cmd(`RCPT TO:<${to}>\r\n`)).toMatch(/^250 /);
    expect(await s.cmd("DATA\r\n")).toMatch(/^354 /);
    const body = simpleMessage("a@sender.example", to).toString(); // a Message-ID of its own
    return { ...s, body, finish: () => s.cmd(`${body}\r\n.\r\n`) };
  }

  const metric = async (registry: Registry, name: string, label?: string) => {
    const m = await registry.getSingleMetric(name)?.get();
    const values = (m?.values ?? []) as { metricName?: string; value: number }[];
    return values.find((v) => (label ? v.metricName === label : true))?.value ?? 0;
  };

  /**
   * Sends the first message, holds its statement on a lock, sends the rest, waits until all of
   * them wait for the next batch, then releases (after `meanwhile`). Returns the replies in order.
   */
  async function inOneBatch(
    registry: Registry,
    sessions: Awaited<ReturnType<typeof atData>>[],
    meanwhile: () => Promise<void> = async () => undefined,
  ): Promise<string[]> {
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE spooled_messages IN SHARE MODE");
    const [first, ...rest] = sessions;
    const replies = [first!.finish()];
    await waitFor(
      async () =>
        (
          await holder.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
        ).rowCount,
      { what: "the first statement to wait on the lock" },
    );
    replies.push(...rest.map((s) => s.finish()));
    await waitFor(async () => (await metric(registry, "mailroom_smtp_accept_waiting")) === rest.length, {
      what: "the other messages to wait for the next batch",
    });
    await meanwhile();
    await holder.query("COMMIT");
    const out = await Promise.all(replies);
    for (const s of sessions) s.close();
    return out;
  }

  const spoolIdOf = (reply: string) => /queued as (spl_\w+)/.exec(reply)?.[1];
  const batchesOf = async (registry: Registry) => ({
    count: await metric(registry, "mailroom_smtp_accept_batch_messages", "mailroom_smtp_accept_batch_messages_count"),
    sum: await metric(registry, "mailroom_smtp_accept_batch_messages", "mailroom_smtp_accept_batch_messages_sum"),
  });

  it("six sessions: the first alone, the five behind it in one statement, one job each; all stored with their jobs", async () => {
    const d = await seedDomain(t.prisma, "batch.example", { plan: "scale" });
    await seedAddress(t.prisma, d, "info");
    const registry = new Registry();
    const ingest = await t.start({ registry });
    const sessions = [];
    for (let i = 0; i < 6; i++) sessions.push(await atData(ingest.port, "info@batch.example"));

    const replies = await inOneBatch(registry, sessions);

    for (const r of replies) expect(r).toMatch(/^250 2\.0\.0 /);
    expect(await batchesOf(registry)).toEqual({ count: 2, sum: 6 });
    const ids = replies.map(spoolIdOf) as string[];
    const rows = await t.prisma.spooledMessage.findMany({ where: { id: { in: ids } }, include: { recipients: true } });
    expect(rows).toHaveLength(6);
    for (const row of rows) {
      // Each message's own bytes (cut from the batch's joined bytes at the right offset), behind
      // its own Received header.
      const { received, client } = splitStored(row.raw ?? new Uint8Array(), row.size);
      expect(received).toMatch(new RegExp(`^Received: from .* id ${row.id}\r\n\tfor <info@batch.example>; `, "s"));
      expect(client.toString().startsWith(sessions[ids.indexOf(row.id)]!.body)).toBe(true);
      expect(createHash("sha256").update(client).digest("hex")).toBe(row.sha256);
      expect(row.recipients).toHaveLength(1);
      // The job of its accept group (one per account and statement): the group's first recipient's id.
      const { jobId } = row.recipients[0]!;
      const job = await waitFor(async () => (await t.queue.getJob(jobId!)) ?? null, { what: `job ${jobId}` });
      expect(job.data).toEqual({ spoolRecipientId: jobId });
    }
    const groups = new Set(rows.map((r) => r.recipients[0]!.jobId));
    expect(groups.size).toBe(2);
    expect([...groups].every((g) => rows.some((r) => r.recipients[0]!.id === g))).toBe(true);
    expect(await monthlyReceived(t.prisma, d.accountId, month)).toBe(6);
    await ingest.close();
  });

  it("an account out of room in the batch: only its refused message gets 452, the others 250", async () => {
    const roomy = await seedDomain(t.prisma, "roomy-batch.example", { plan: "scale" });
    await seedAddress(t.prisma, roomy, "info");
    const full: Seeded = await seedDomain(t.prisma, "full-batch.example", { plan: "free" });
    await seedAddress(t.prisma, full, "info");
    await t.prisma.usageCounter.create({ data: { accountId: full.accountId, month, received: 2_999 } });
    const registry = new Registry();
    const ingest = await t.start({ registry });
    // Both sessions for full-batch.example pass RCPT (room for one); only one can be counted.
    const sessions = [];
    for (const to of ["roomy", "roomy", "full", "roomy", "full", "roomy"]) {
      sessions.push(await atData(ingest.port, `info@${to}-batch.example`));
    }

    const replies = await inOneBatch(registry, sessions);

    for (const i of [0, 1, 3, 5]) expect(replies[i]).toMatch(/^250 2\.0\.0 /);
    const fullReplies = [replies[2], replies[4]] as string[];
    expect(fullReplies.filter((r) => r.startsWith("250 "))).toHaveLength(1);
    expect(fullReplies.find((r) => !r.startsWith("250 "))).toMatch(/^452 4\.2\.2 /);
    expect(await monthlyReceived(t.prisma, full.accountId, month)).toBe(3_000);
    expect(await monthlyReceived(t.prisma, roomy.accountId, month)).toBe(4);
    expect(await t.prisma.spoolRecipient.count({ where: { accountId: full.accountId } })).toBe(1);
    expect(await t.prisma.spoolRecipient.count({ where: { accountId: roomy.accountId } })).toBe(4);
    // The roomy messages behind the first went in one statement; full-batch's settled alone.
    expect(await batchesOf(registry)).toEqual({ count: 2, sum: 4 });
    await ingest.close();
  });

  describe("Redis goes down while a batch is being written", () => {
    let redis: ThrowawayRedis;
    beforeAll(async () => {
      redis = await startThrowawayRedis();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it("every message of it still gets 250: its rows are committed and counted, pending for the sweeper", async () => {
      const d = await seedDomain(t.prisma, "redis-batch.example", { plan: "scale" });
      await seedAddress(t.prisma, d, "info");
      const conn = createRedis(redis.url, "producer");
      conn.on("error", () => undefined);
      const queue = createQueue("inbound", { connection: conn, prefix: t.env.redisPrefix });
      queue.on("error", () => undefined);
      const registry = new Registry();
      const ingest = await t.start({ registry, queue });
      try {
        const sessions = [];
        for (let i = 0; i < 5; i++) sessions.push(await atData(ingest.port, "info@redis-batch.example"));

        const replies = await inOneBatch(registry, sessions, () => redis.stop());

        // The pending recipient rows are the rule engine's work items; the jobs are only the wake-up
        // (queued after the 250; with Redis gone the rule engine's sweeper queues the rows instead).
        for (const r of replies) expect(r).toMatch(/^250 /);
        expect(await batchesOf(registry)).toEqual({ count: 2, sum: 5 });
        const rows = await t.prisma.spoolRecipient.findMany({ where: { accountId: d.accountId } });
        expect(rows.map((r) => r.status)).toEqual(["pending", "pending", "pending", "pending", "pending"]);
        expect(await t.prisma.spooledMessage.count({ where: { id: { in: rows.map((r) => r.spoolId) } } })).toBe(5);
        expect(await monthlyReceived(t.prisma, d.accountId, month)).toBe(5);
      } finally {
        await ingest.close();
        await queue.close().catch(() => undefined);
        conn.disconnect();
      }
    });
  });
});
