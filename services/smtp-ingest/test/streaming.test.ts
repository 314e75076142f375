import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma, poolOf, readBytea } from "@mailroom/db";
import { type IngestEnv, ingestEnv } from "@mailroom/stack";
import {
  connect,
  mimeWithAttachment,
  rawSession,
  type Seeded,
  seedAddress,
  seedDomain,
  send,
  sparePort,
  splitStored,
  startPgProxy,
  waitFor,
} from "@mailroom/testing";
import { DataBudget } from "../src/data-budget.ts";
import { purgeStaleChunks } from "../src/staging.ts";

/**
 * DATA streams into Postgres (spool_chunks) as it arrives instead of being held in memory (issue 12
 * item 4). Real Postgres, real SMTP clients; the crash test kills a real smtp-ingest process.
 */
const MB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const TO = "big@stream.example";
const FROM = "sender@outside.example";

describe("smtp-ingest streams DATA to the spool", () => {
  let t: IngestEnv;
  let d: Seeded;
  const db = () => poolOf(t.prisma);
  const count = async (sql: string, params: unknown[] = []) =>
    Number((await db().query<{ n: string }>(sql, params)).rows[0]?.n);
  const chunksOf = (spoolId?: string) =>
    spoolId
      ? count(`SELECT count(*) AS n FROM spool_chunks WHERE "uploadId" = $1`, [spoolId])
      : count(`SELECT count(*) AS n FROM spool_chunks`);
  const spools = () => count(`SELECT count(*) AS n FROM spooled_messages`);
  const recipients = () => count(`SELECT count(*) AS n FROM spool_recipients`);

  beforeAll(async () => {
    t = await ingestEnv();
    d = await seedDomain(t.prisma, "stream.example");
    await seedAddress(t.prisma, d, "big");
  });
  afterAll(async () => {
    await t?.close();
  });

  const bigMessage = (mb: number) =>
    Buffer.from(
      mimeWithAttachment({
        to: TO,
        messageId: `<${randomBytes(8).toString("hex")}@outside.example>`,
        filename: "big.bin",
        contentType: "application/octet-stream",
        content: randomBytes(mb * MB),
      }),
    );

  /** A raw session that has reached `354` (its DATA is then written by hand). */
  async function atData(port: number) {
    const s = await rawSession(port);
    await s.next(/^220 /);
    s.write("EHLO client.example");
    await s.next(/^250 /);
    s.write(`MAIL FROM:<${FROM}>`);
    await s.next(/^250 2\.1\.0/);
    s.write(`RCPT TO:<${TO}>`);
    await s.next(/^250 2\.1\.5/);
    s.write("DATA");
    await s.next(/^354 /);
    return s;
  }

  it("a big message is appended in slices while it arrives, then stored byte-identical", async () => {
    const budget = new DataBudget(8 * MB);
    const server = await t.start({ maxMessageBytes: 40 * MB, data: { budget, chunkBytes: 256 * 1024 } });
    const raw = bigMessage(20); // ≈ 27 MB on the wire
    const spoolsBefore = await spools();
    const body = new PassThrough();
    const conn = await connect({ port: server.port });
    try {
      const sent = send(conn, { from: FROM, to: [TO] }, body);
      body.write(raw.subarray(0, 4 * MB));
      // Mid-DATA: slices are in Postgres already, and nothing is a spooled (accepted) message yet.
      await waitFor(async () => (await chunksOf()) >= 4, { what: "slices of the unfinished message" });
      expect(await spools()).toBe(spoolsBefore);
      body.end(raw.subarray(4 * MB));
      const r = await sent;
      expect(r.response).toMatch(/^250 2\.0\.0 /);
      const spoolId = /queued as (spl_\w+)/.exec(r.response)![1]!;
      const stored = await readBytea(db(), { table: "spooled_messages", column: "raw" }, spoolId);
      // Our Received header, then exactly what the client sent; size and sha256 are the client's.
      const { received, client } = splitStored(stored!, raw.length);
      expect(received).toMatch(
        new RegExp(`^Received: from [^\r\n]+\r\n(\t[^\r\n]+\r\n)*\tby [^\r\n]+ id ${spoolId}\r\n`),
      );
      expect(client.length).toBe(raw.length);
      expect(sha256(client)).toBe(sha256(raw));
      const row = await t.prisma.spooledMessage.findUniqueOrThrow({
        where: { id: spoolId },
        select: { sha256: true, size: true },
      });
      expect(row).toEqual({ sha256: sha256(raw), size: raw.length });
      expect(await chunksOf()).toBe(0); // joined and deleted in the accepting transaction
      expect(budget.heldBytes).toBe(0);
    } finally {
      conn.quit();
      await server.close();
    }
  }, 120_000);

  it("a client that disconnects mid-DATA leaves no slices and no spool rows behind", async () => {
    const budget = new DataBudget(8 * MB);
    const server = await t.start({ maxMessageBytes: 40 * MB, data: { budget, chunkBytes: 64 * 1024 } });
    const [spoolsBefore, recipientsBefore] = [await spools(), await recipients()];
    try {
      const s = await atData(server.port);
      s.socket.write(`Subject: cut short\r\n\r\n${"x".repeat(74)}\r\n`.repeat(20_000)); // ≈ 1.9 MB
      await waitFor(async () => (await chunksOf()) >= 4, { what: "slices of the unfinished message" });
      s.socket.destroy();
      await waitFor(async () => (await chunksOf()) === 0, { what: "the slices deleted" });
      await waitFor(async () => budget.heldBytes === 0, { what: "the budget given back" });
      expect(await spools()).toBe(spoolsBefore);
      expect(await recipients()).toBe(recipientsBefore);
    } finally {
      await server.close();
    }
  }, 60_000);

  it("over the size limit: read to the end, 552 5.3.4, nothing staged kept", async () => {
    const budget = new DataBudget(8 * MB);
    const server = await t.start({ maxMessageBytes: MB, data: { budget, chunkBytes: 64 * 1024 } });
    const spoolsBefore = await spools();
    const conn = await connect({ port: server.port });
    try {
      const r = await send(conn, { from: FROM, to: [TO] }, bigMessage(3));
      expect(r.ok).toBe(false);
      expect(r.response).toMatch(/^552 5\.3\.4 /);
      expect(await chunksOf()).toBe(0);
      expect(await spools()).toBe(spoolsBefore);
      expect(budget.heldBytes).toBe(0);
    } finally {
      conn.quit();
      await server.close();
    }
  }, 60_000);

  it("Postgres lost mid-stream: 451 4.3.0, nothing accepted, and the orphaned slices are purged", async () => {
    const proxy = await startPgProxy(t.env.databaseUrl);
    const proxied = createPrisma(proxy.url, { max: 2 });
    const budget = new DataBudget(8 * MB);
    const server = await t.start({
      prisma: proxied,
      maxMessageBytes: 40 * MB,
      data: { budget, chunkBytes: 64 * 1024 },
    });
    const [spoolsBefore, recipientsBefore] = [await spools(), await recipients()];
    const jobs = () => t.queue.getJobCounts("wait", "prioritized", "active", "delayed", "completed", "failed");
    const jobsBefore = await jobs();
    const raw = bigMessage(2);
    const body = new PassThrough();
    const conn = await connect({ port: server.port });
    try {
      const sent = send(conn, { from: FROM, to: [TO] }, body);
      body.write(raw.subarray(0, MB));
      await waitFor(async () => (await chunksOf()) >= 2, { what: "slices of the unfinished message" });
      proxy.down();
      body.end(raw.subarray(MB));
      const r = await sent;
      expect(r.ok).toBe(false);
      expect(r.response).toMatch(/^451 4\.3\.0 /);
      proxy.up();
      expect(await spools()).toBe(spoolsBefore);
      expect(await recipients()).toBe(recipientsBefore);
      expect(await jobs()).toEqual(jobsBefore);
      expect(budget.heldBytes).toBe(0);
      // The delete of the slices could not reach Postgres either: the purge removes them.
      await purgeStaleChunks(db(), 0);
      expect(await chunksOf()).toBe(0);
    } finally {
      conn.quit();
      await server.close();
      await proxied.$disconnect().catch(() => undefined);
      await proxy.close();
    }
  }, 60_000);

  it("a global budget bounds the DATA held in memory across connections", async () => {
    // Slices larger than any message: only the budget makes a connection write before the end.
    const budget = new DataBudget(512 * 1024);
    const server = await t.start({ maxMessageBytes: 40 * MB, data: { budget, chunkBytes: 8 * MB } });
    const n = 4;
    const messages = Array.from({ length: n }, () => bigMessage(2)); // ≈ 2.7 MB each
    const conns = await Promise.all(messages.map(() => connect({ port: server.port })));
    try {
      const replies = await Promise.all(conns.map((c, i) => send(c, { from: FROM, to: [TO] }, messages[i]!)));
      for (const [i, r] of replies.entries()) {
        expect(r.response).toMatch(/^250 2\.0\.0 /);
        const spoolId = /queued as (spl_\w+)/.exec(r.response)![1]!;
        const row = await t.prisma.spooledMessage.findUniqueOrThrow({
          where: { id: spoolId },
          select: { sha256: true },
        });
        expect(row.sha256).toBe(sha256(messages[i]!));
      }
      // The budget was reached (together the messages are 20× it), and never passed by more than one
      // socket read (≤ 64 KiB) per connection: connections wrote early and waited instead.
      expect(budget.peakBytes).toBeGreaterThanOrEqual(budget.limitBytes);
      expect(budget.peakBytes).toBeLessThanOrEqual(budget.limitBytes + n * 65_540);
      expect(budget.heldBytes).toBe(0);
      expect(await chunksOf()).toBe(0);
    } finally {
      for (const c of conns) c.quit();
      await server.close();
    }
  }, 120_000);

  it("an ingest killed mid-DATA leaves only slices, never a spool row, and they are purged", async () => {
    const root = resolve(import.meta.dirname, "../../..");
    const children: ChildProcess[] = [];
    const startIngest = async (extra: Record<string, string> = {}) => {
      const port = await sparePort();
      const child = spawn(process.execPath, ["--import", "tsx", "services/smtp-ingest/src/main.ts"], {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: t.env.databaseUrl,
          REDIS_URL: t.env.redisUrl,
          REDIS_PREFIX: t.env.redisPrefix,
          SMTP_PORT: String(port),
          SMTP_HOST: "127.0.0.1",
          SMTP_DATA_CHUNK_BYTES: "65536",
          LOG_LEVEL: "silent",
          ...extra,
        },
        stdio: "ignore",
      });
      children.push(child);
      return { child, port };
    };
    const [spoolsBefore, recipientsBefore] = [await spools(), await recipients()];
    try {
      const first = await startIngest();
      const s = await waitFor(() => atData(first.port).catch(() => null), {
        what: "smtp-ingest up",
        timeoutMs: 60_000,
        intervalMs: 200,
      });
      s.socket.write(`Subject: crash\r\n\r\n${"y".repeat(74)}\r\n`.repeat(10_000)); // ≈ 0.8 MB
      await waitFor(async () => (await chunksOf()) >= 4, { what: "slices of the unfinished message" });
      const exited = new Promise((r) => first.child.once("exit", r));
      first.child.kill("SIGKILL");
      await exited;
      s.socket.destroy();
      // Nothing a sweeper would take for accepted mail: no spool row, no recipient row.
      expect(await spools()).toBe(spoolsBefore);
      expect(await recipients()).toBe(recipientsBefore);
      expect(await chunksOf()).toBeGreaterThan(0);
      // The next ingest to start purges slices idle longer than SPOOL_STAGING_TTL_MS.
      await startIngest({ SPOOL_STAGING_TTL_MS: "1" });
      await waitFor(async () => (await chunksOf()) === 0, { what: "the orphaned slices purged", timeoutMs: 60_000 });
    } finally {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    }
  }, 120_000);
});
