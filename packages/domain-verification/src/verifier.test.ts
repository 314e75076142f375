import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { domainDnsRecords } from "@mailroom/core";
import { createPrisma, newId, type PrismaClient } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { createTestEnv, type DnsServer, startDnsServer, type TestEnv } from "@mailroom/testing";
import { createDomainDns, type DomainDns } from "./dns.ts";
import { PENDING_WINDOW_MS, VERIFIED_RECHECK_MS } from "./lifecycle.ts";
import { runDueChecks, type VerifierOptions, verifyNow } from "./verifier.ts";

/**
 * The verifier against a real Postgres and a real DNS server on loopback, with an injected clock:
 * the schedule and the 72 h window are driven by moving `now`, never by waiting.
 */
const MX_HOST = "mx.mailroom.test";
const DKIM_DOMAIN = "mailroom.test";
const MIN = 60_000;

let env: TestEnv;
let prisma: PrismaClient;
let server: DnsServer;
let dnsClient: DomainDns;
let shortDns: DomainDns;
let accountId: string;
let now: Date;
const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

const opts = (dns: DomainDns = dnsClient): VerifierOptions => ({
  prisma,
  dns,
  logger,
  now: () => now,
  pollIntervalMs: 1_000,
  batchSize: 10,
  concurrency: 4,
  leaseMs: 2 * MIN,
});
const advance = (ms: number) => {
  now = new Date(now.getTime() + ms);
};

let seq = 0;
async function createDomain() {
  const domain = `verify-${++seq}-${Date.now().toString(36)}.com`;
  const tokens = [`a${seq}tok`, `b${seq}tok`, `c${seq}tok`];
  const records = domainDnsRecords(domain, tokens, MX_HOST, DKIM_DOMAIN);
  const row = await prisma.domain.create({
    data: {
      id: newId("domain"),
      accountId,
      domain,
      dkimTokens: tokens,
      dnsRecords: records,
      createdAt: now,
      nextCheckAt: new Date(now.getTime() + MIN),
    },
  });
  return { row, domain, tokens, records };
}

function publish(d: Awaited<ReturnType<typeof createDomain>>, which: { mx?: boolean; cnames?: number } = {}) {
  const { mx = true, cnames = 3 } = which;
  if (mx) server.set(d.domain, "MX", [{ priority: 10, exchange: MX_HOST }]);
  d.tokens.slice(0, cnames).forEach((t) => {
    server.set(`${t}._domainkey.${d.domain}`, "CNAME", [`${t}.dkim.${DKIM_DOMAIN}`]);
  });
}

const reload = (id: string) => prisma.domain.findUniqueOrThrow({ where: { id } });

beforeAll(async () => {
  env = await createTestEnv();
  prisma = createPrisma(env.databaseUrl, { max: 4 });
  server = await startDnsServer();
  // A generous timeout: on a busy machine a loopback answer can take far longer than usual, and
  // a late answer must not turn a conclusive check into an inconclusive one. The timeout test
  // uses its own short-timeout client against answers held back far longer than that.
  dnsClient = createDomainDns({ servers: [server.server], timeoutMs: 10_000, tries: 1 });
  shortDns = createDomainDns({ servers: [server.server], timeoutMs: 250, tries: 1 });
  accountId = newId("account");
  await prisma.account.create({ data: { id: accountId, name: "verifier test" } });
});
afterAll(async () => {
  await server?.close();
  await prisma?.$disconnect();
  await env?.cleanup();
});
beforeEach(async () => {
  // Each test owns the clock from a fixed point far from the others' domains.
  now = new Date(Date.UTC(2030, 0, 1 + seq));
  server.setDelay(0);
  await prisma.domain.deleteMany({});
});

describe("pending domains", () => {
  it("is not checked before its first check is due, then backs off 1 m → 5 m → 15 m → hourly", async () => {
    const d = await createDomain();
    expect((await runDueChecks(opts())).checked).toBe(0);

    const expectedDelays = [5 * MIN, 15 * MIN, 60 * MIN, 60 * MIN];
    advance(MIN);
    for (const [i, delay] of expectedDelays.entries()) {
      expect((await runDueChecks(opts())).checked).toBe(1);
      const row = await reload(d.row.id);
      expect(row).toMatchObject({ status: "pending", checkCount: i + 1, lastCheckedAt: now });
      expect(row.nextCheckAt?.getTime()).toBe(now.getTime() + delay);
      advance(delay);
    }
  });

  it("stays pending while only some records are published (MX but two of three CNAMEs; CNAMEs but no MX)", async () => {
    const a = await createDomain();
    const b = await createDomain();
    publish(a, { cnames: 2 });
    publish(b, { mx: false });
    advance(MIN);
    const stats = await runDueChecks(opts());
    expect(stats).toMatchObject({ checked: 2, transitions: { still_pending: 2 } });
    expect((await reload(a.row.id)).status).toBe("pending");
    expect((await reload(b.row.id)).status).toBe("pending");

    const manual = await verifyNow(opts(), a.row.id);
    expect(manual?.domain.status).toBe("pending");
    expect(manual?.records.map((r) => [r.type, r.found])).toEqual([
      ["MX", true],
      ["CNAME", true],
      ["CNAME", true],
      ["CNAME", false],
    ]);
    expect(manual?.records[3]).toMatchObject({ observed: [] });
    expect(manual?.records[3]).not.toHaveProperty("error");
  });

  it("a CNAME pointing elsewhere, or an MX set without our host, does not count", async () => {
    const d = await createDomain();
    publish(d);
    server.set(d.domain, "MX", [{ priority: 5, exchange: "mx.elsewhere.example" }]);
    server.set(`${d.tokens[0]}._domainkey.${d.domain}`, "CNAME", ["other.dkim.example"]);
    const r = await verifyNow(opts(), d.row.id);
    expect(r?.domain.status).toBe("pending");
    expect(r?.records[0]).toMatchObject({ type: "MX", found: false, observed: ["mx.elsewhere.example"] });
    expect(r?.records[1]).toMatchObject({ type: "CNAME", found: false, observed: ["other.dkim.example"] });
  });

  it("verifies once every record is observed, ignoring case, trailing dots and extra MX hosts", async () => {
    const d = await createDomain();
    publish(d);
    server.set(d.domain, "MX", [
      { priority: 20, exchange: "backup.mx.example" },
      { priority: 10, exchange: `${MX_HOST.toUpperCase()}.` },
    ]);
    server.set(`${d.tokens[1]}._domainkey.${d.domain}`, "CNAME", [`${d.tokens[1]}.DKIM.${DKIM_DOMAIN}.`]);
    advance(MIN);
    expect((await runDueChecks(opts())).transitions).toEqual({ verified: 1 });
    const row = await reload(d.row.id);
    expect(row).toMatchObject({ status: "verified", verifiedAt: now, warning: null });
    expect(row.nextCheckAt?.getTime()).toBe(now.getTime() + VERIFIED_RECHECK_MS);
  });

  it("fails after 72 h pending; a manual verify then opens a new window and can verify at once", async () => {
    const d = await createDomain();
    publish(d, { cnames: 0 });
    const created = now.getTime();
    // Run every scheduled check up to the deadline: the last one lands on it exactly.
    for (let i = 0; i < 200; i++) {
      const row = await reload(d.row.id);
      if (row.status !== "pending" || !row.nextCheckAt) break;
      now = row.nextCheckAt;
      await runDueChecks(opts());
    }
    const failed = await reload(d.row.id);
    expect(failed).toMatchObject({ status: "failed", nextCheckAt: null });
    expect(failed.lastCheckedAt?.getTime()).toBe(created + PENDING_WINDOW_MS);

    advance(24 * 60 * MIN);
    expect((await runDueChecks(opts())).checked).toBe(0); // failed domains are not polled

    const retried = await verifyNow(opts(), d.row.id);
    expect(retried?.domain).toMatchObject({ status: "pending", verifyStartedAt: now, checkCount: 0 });
    expect(retried?.domain.nextCheckAt?.getTime()).toBe(now.getTime() + MIN);

    publish(d);
    const verified = await verifyNow(opts(), d.row.id);
    expect(verified?.domain.status).toBe("verified");
  });
});

describe("verified domains", () => {
  it("are re-checked daily: a missing MX raises a warning (status stays verified), its return clears it", async () => {
    const d = await createDomain();
    publish(d);
    advance(MIN);
    await runDueChecks(opts());
    expect((await reload(d.row.id)).status).toBe("verified");

    server.remove(d.domain, "MX");
    advance(VERIFIED_RECHECK_MS - 1);
    expect((await runDueChecks(opts())).checked).toBe(0);
    advance(1);
    expect((await runDueChecks(opts())).transitions).toEqual({ warning_raised: 1 });
    const warned = await reload(d.row.id);
    expect(warned.status).toBe("verified");
    expect(warned.warning).toContain(`does not point to ${MX_HOST}`);

    publish(d);
    advance(VERIFIED_RECHECK_MS);
    expect((await runDueChecks(opts())).transitions).toEqual({ warning_cleared: 1 });
    expect(await reload(d.row.id)).toMatchObject({ status: "verified", warning: null });
  });
});

describe("DNS failures change nothing", () => {
  it("a timeout neither verifies, fails nor warns — and says so per record", async () => {
    const pending = await createDomain();
    publish(pending);
    const expiring = await createDomain();
    const verified = await createDomain();
    publish(verified);
    await prisma.domain.update({ where: { id: verified.row.id }, data: { status: "verified", warning: null } });
    server.remove(verified.domain, "MX");
    // The expiring domain's window is over: only a conclusive check may fail it.
    await prisma.domain.update({
      where: { id: expiring.row.id },
      data: { verifyStartedAt: new Date(now.getTime() - PENDING_WINDOW_MS - MIN) },
    });

    // Held back 2 s against a 250 ms timeout: both timers run in this process, so the client's
    // always fires first, however busy the machine is.
    server.setDelay(2_000);
    advance(MIN);
    const stats = await runDueChecks(opts(shortDns));
    expect(stats).toMatchObject({ checked: 3, transitions: { inconclusive: 3 } });
    expect(await reload(pending.row.id)).toMatchObject({ status: "pending" });
    expect(await reload(expiring.row.id)).toMatchObject({ status: "pending" });
    expect(await reload(verified.row.id)).toMatchObject({ status: "verified", warning: null });

    const manual = await verifyNow(opts(shortDns), pending.row.id);
    expect(manual?.domain.status).toBe("pending");
    for (const r of manual?.records ?? [])
      expect(r).toMatchObject({ found: false, error: "DNS lookup failed: ETIMEOUT" });

    // Once DNS answers again, the same domains move on.
    server.setDelay(0);
    const recheck = await verifyNow(opts(), pending.row.id);
    expect(recheck?.domain.status).toBe("verified");
    expect((await verifyNow(opts(), expiring.row.id))?.domain.status).toBe("failed");
  });
});

describe("several replicas", () => {
  it("never check the same due domain twice in one round", async () => {
    const domains = await Promise.all(Array.from({ length: 12 }, () => createDomain()));
    advance(MIN);
    const small = { ...opts(), batchSize: 3, concurrency: 2 };
    const runs = await Promise.all([runDueChecks(small), runDueChecks(small), runDueChecks(small)]);
    expect(runs.reduce((n, r) => n + r.checked, 0)).toBe(domains.length);
    const rows = await prisma.domain.findMany({ select: { checkCount: true } });
    expect(rows.map((r) => r.checkCount)).toEqual(domains.map(() => 1));
  });
});
