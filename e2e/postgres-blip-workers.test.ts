import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { connectClient, poolOf } from "@mailroom/db";
import { fixtures } from "@mailroom/retention/testing";
import {
  type DnsServer,
  seedAddress,
  seedDomain,
  sendOnce,
  simpleMessage,
  sparePort,
  startDnsServer,
} from "@mailroom/testing";
import { type Blip, blipEnv, jobEvents, waitingForLock, whileAlive } from "./postgres-blip.ts";
import { type ServiceProcess, startService, stopService, waitReady } from "./service-processes.ts";

/**
 * A dropped Postgres connection must not end the rule engine or the retention pass. A connection
 * checked out of the pool and held (the rule engine's pipelined store transaction, the retention
 * pass's advisory-lock holder and its batch transactions) had no 'error' listener while held, so a
 * drop ended the process even with Kubernetes probes keeping the pool's own listener in place.
 * Real processes behind a TCP proxy in front of Postgres, cut while such a connection is held (a
 * lock taken by the test keeps it there): each process stays up and its work is retried.
 */
const processes: ServiceProcess[] = [];
// SPF/DKIM lookups and domain checks ask a DNS server on loopback that knows nothing, not the world.
let dns: DnsServer;
beforeAll(async () => {
  dns = await startDnsServer({});
});
afterAll(() => dns?.close());
const start = async (name: string, env: Record<string, string>) => {
  const p = await startService(name, { LOG_LEVEL: "info", DNS_SERVERS: dns.server, ...env });
  processes.push(p);
  return p;
};
afterEach(async () => {
  await Promise.all(processes.splice(0).map(stopService));
});

describe("the rule engine cut in the middle of its store transaction", () => {
  let b: Blip;
  beforeAll(async () => {
    b = await blipEnv();
  });
  afterAll(() => b?.close());

  it("stays up, the job is retried, and the message is stored once", async () => {
    const to = "blip@blip-engine.example";
    await seedAddress(b.prisma, await seedDomain(b.prisma, "blip-engine.example"), "blip");
    const redis = { REDIS_URL: b.env.redisUrl, REDIS_PREFIX: b.env.redisPrefix };
    const smtpPort = await sparePort();
    // The ingest on Postgres directly: only the rule engine's connections are cut.
    const ingest = await start("smtp-ingest", {
      ...redis,
      DATABASE_URL: b.env.databaseUrl,
      SMTP_HOST: "127.0.0.1",
      SMTP_PORT: String(smtpPort),
    });
    const engine = await start("rule-engine", { ...redis, DATABASE_URL: b.proxy.url });
    await Promise.all([waitReady(ingest), waitReady(engine)]);

    // The store statement waits for this lock, inside its transaction, on its checked-out connection.
    const holder = await connectClient(b.env.databaseUrl);
    try {
      await holder.query("BEGIN");
      await holder.query("LOCK TABLE emails IN SHARE MODE");
      const from = "sender@outside.example";
      const sent = await sendOnce({ port: smtpPort }, { from, to: [to] }, simpleMessage(from, to, "cut mid-store"));
      expect(sent.response).toMatch(/^250 /);
      // The store statement (store.ts STORE_SQL; pg_stat_activity keeps only its first 1 KB).
      const store = "%WITH same AS (%SELECT id FROM emails%";
      await whileAlive(engine, () => waitingForLock(b.prisma, store), "the store to wait", 120_000);
      b.proxy.down();
      await holder.query("ROLLBACK");
      b.proxy.up();
    } finally {
      await holder.end();
    }

    const stored = async () =>
      (await b.prisma.spoolRecipient.findMany({ where: { recipient: to } })).every((r) => r.status === "stored");
    await whileAlive(engine, stored, "the message stored", 120_000);
    const [rcpt] = await b.prisma.spoolRecipient.findMany({ where: { recipient: to } });
    // Retried: the job ran again after the cut and completed. (The cut try's COMMIT was already in
    // Postgres's input and may have committed the store: then the retry finds it stored.)
    const ranTwiceAndCompleted = async () => {
      const events = await jobEvents(b, rcpt?.id ?? "");
      return events.filter((e) => e === "active").length >= 2 && events.at(-1) === "completed";
    };
    await whileAlive(engine, ranTwiceAndCompleted, "the job retried and completed", 120_000);
    expect(await b.prisma.email.count({ where: { spoolRecipientId: rcpt?.id } })).toBe(1);
    // The cut try was an outage, not the message's fault: never more than the one try that stored it
    // is counted (none, when the give-back landed before the cut try's own COMMIT did).
    expect(rcpt?.attempts).toBeLessThanOrEqual(1);
    await whileAlive(engine, async () => true, "the rule engine still running");
  }, 300_000);
});

describe("the retention pass cut while it holds its lock", () => {
  let b: Blip;
  beforeAll(async () => {
    b = await blipEnv();
  });
  afterAll(() => b?.close());

  it("leaves the domain-verifier up, and the next pass deletes what the cut one could not", async () => {
    const f = fixtures(b.prisma, new Date());
    const advisoryLocks = async () =>
      (
        await poolOf(b.prisma).query(
          `SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database
            WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()`,
        )
      ).rowCount;
    const expired = await f.email({ account: await f.account(30), days: 31 });
    // The pass takes its advisory lock, deletes the email in a batch transaction, then waits for this
    // thread lock: both its lock holder and its batch connection are checked out when Postgres goes.
    const holder = await connectClient(b.env.databaseUrl);
    let verifier: ServiceProcess;
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT id FROM threads WHERE id = $1 FOR UPDATE", [expired.threadId]);
      verifier = await start("domain-verifier", {
        DATABASE_URL: b.proxy.url,
        RETENTION_INTERVAL_MS: "300",
        RETENTION_BATCH_SIZE: "10",
      });
      await whileAlive(
        verifier,
        () => waitingForLock(b.prisma, "SELECT id FROM threads%"),
        "the retention pass to wait for the thread",
        120_000,
      );
      expect(await advisoryLocks()).toBe(1);
      b.proxy.down();
      await holder.query("ROLLBACK");
    } finally {
      await holder.end();
    }
    // The lock went with its session; the process must outlive both and take it again.
    await whileAlive(verifier, async () => (await advisoryLocks()) === 0, "the retention lock gone with its session");
    b.proxy.up();
    await whileAlive(
      verifier,
      async () => (await b.prisma.email.count({ where: { id: expired.id } })) === 0,
      "a later pass to delete the expired email",
      120_000,
    );
    expect(await b.prisma.thread.count({ where: { id: expired.threadId } })).toBe(0);
    await whileAlive(verifier, async () => true, "the domain-verifier still running");
  }, 300_000);
});
