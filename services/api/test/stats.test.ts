import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { callApi, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import nodemailer from "nodemailer";

/**
 * GET /stats and GET /endpoints/{id}/health (and their MCP tools) over mail that really arrived over
 * SMTP, was blocked by a shield rule or delivered by the dispatcher to a real receiver that answers
 * 200, 503 or not at all; every number is checked against the rows in Postgres.
 */
let stack: Stack;
let receiver: Receiver;
let acct: TestAccount;
let other: TestAccount;
let readKey: string;
const domain = "stats-example.com";
const ep: Record<"ok" | "bad" | "slow", string> = { ok: "", bad: "", slow: "" };

async function send(to: string, subject: string) {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true });
  await transport.sendMail({ from: "a@sender.example", to: `${to}@${domain}`, subject, text: "hello\n" });
  transport.close();
}

async function route(localPart: string, path: string, settings: Record<string, unknown>) {
  const e = await acct.api("POST", "/api/v1/endpoints", { url: `${receiver.url}/${path}`, ...settings });
  expect(e.status).toBe(201);
  const domainId = (await acct.api("GET", "/api/v1/domains")).body.data[0].id;
  expect((await acct.api("POST", "/api/v1/addresses", { domainId, localPart, endpointId: e.body.id })).status).toBe(
    201,
  );
  return e.body.id as string;
}

const deliveryStatuses = (endpointId: string) =>
  stack.prisma.delivery
    .findMany({ where: { endpointId }, select: { status: true } })
    .then((r) => r.map((d) => d.status));

beforeAll(async () => {
  stack = await startStack({ backoffUnitMs: 20 });
  receiver = await startReceiver();
  receiver.respond((req) =>
    req.path.startsWith("/bad")
      ? { status: 503, body: "upstream down: try later" }
      : req.path.startsWith("/slow")
        ? { status: 200, body: "late", delayMs: 600_000 }
        : { status: 200, body: "ok" },
  );
  acct = await stack.account();
  other = await stack.account();
  readKey = String((await stack.admin("keys", "create", "--account", acct.accountId, "--scope", "read")).key);
  expect((await acct.api("POST", "/api/v1/domains", { domain })).status).toBe(201);
  await stack.admin("domains", "verify", "--domain", domain, "--force");
  ep.ok = await route("ok", "ok", { maxAttempts: 1 });
  ep.bad = await route("bad", "bad", { maxAttempts: 2 });
  const rule = await acct.api("POST", "/api/v1/shield-rules", {
    name: "no spam",
    action: "block",
    conditions: [{ field: "subject", operator: "contains", value: "spam" }],
  });
  expect(rule.status).toBe(201);
  for (const [to, subject] of [
    ["ok", "one"],
    ["ok", "two"],
    ["ok", "three"],
    ["bad", "four"],
    ["bad", "five"],
    ["ok", "buy spam now"],
  ] as const)
    await send(to, subject);
  await waitFor(async () => (await deliveryStatuses(ep.ok)).filter((s) => s === "delivered").length === 3 || null, {
    what: "3 delivered",
    timeoutMs: 90_000,
  });
  await waitFor(async () => (await deliveryStatuses(ep.bad)).filter((s) => s === "dead").length === 2 || null, {
    what: "2 dead",
    timeoutMs: 90_000,
  });
  await waitFor(
    async () => (await stack.prisma.blockRecord.count({ where: { accountId: acct.accountId } })) === 1 || null,
    {
      what: "1 block record",
      timeoutMs: 90_000,
    },
  );
  // One stored as the rule engine stores a message past its processing budget (rule-engine tests
  // produce that path; here only how it is counted matters).
  const email = await stack.prisma.email.findFirstOrThrow({ where: { accountId: acct.accountId, subject: "one" } });
  await stack.prisma.email.update({ where: { id: email.id }, data: { virusVerdict: "PROCESSING_FAILED" } });
}, 180_000);

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

type Bucket = {
  start: string;
  mail: { stored: number; blocked: number; processingFailed: number };
  deliveries: { succeeded: number; retrying: number; dead: number; pending: number };
  latency: { attempts: number; p50Ms: number | null; p95Ms: number | null };
};

/** Attempt durations of the account's deliveries, from Postgres, sorted. */
async function durations(where: { accountId?: string; endpointId?: string }) {
  const rows = await stack.prisma.deliveryAttempt.findMany({
    where: { delivery: where },
    select: { durationMs: true },
  });
  return rows.map((r) => r.durationMs).sort((a, b) => a - b);
}
/** percentile_disc: the first value whose cumulative share reaches p. */
const disc = (xs: number[], p: number) => xs[Math.max(0, Math.ceil(p * xs.length) - 1)] ?? null;

describe("GET /stats", () => {
  it.each(["24h", "30d"] as const)("window=%s: buckets and totals match the rows", async (window) => {
    const res = await acct.api("GET", `/api/v1/stats?window=${window}`);
    expect(res.status).toBe(200);
    const body = res.body as {
      window: string;
      bucket: string;
      from: string;
      buckets: Bucket[];
      totals: Omit<Bucket, "start">;
    };
    expect(body.window).toBe(window);
    expect(body.buckets).toHaveLength(window === "24h" ? 24 : 30);
    const step = window === "24h" ? 3_600_000 : 86_400_000;
    expect(Date.parse(body.from) % step).toBe(0);
    expect(body.buckets.map((b) => Date.parse(b.start) - Date.parse(body.from))).toEqual(
      body.buckets.map((_, i) => i * step),
    );
    expect(body.totals.mail).toEqual({ stored: 4, blocked: 1, processingFailed: 1 });
    expect(body.totals.deliveries).toEqual({ succeeded: 3, retrying: 0, dead: 2, pending: 0 });
    const ms = await durations({ accountId: acct.accountId });
    expect(ms).toHaveLength(3 + 2 * 2);
    expect(body.totals.latency).toEqual({ attempts: 7, p50Ms: disc(ms, 0.5), p95Ms: disc(ms, 0.95) });
    // The buckets add up to the totals (the mail may straddle an hour boundary).
    const sum = (f: (b: Bucket) => number) => body.buckets.reduce((s, b) => s + f(b), 0);
    expect(sum((b) => b.mail.stored)).toBe(4);
    expect(sum((b) => b.mail.blocked)).toBe(1);
    expect(sum((b) => b.deliveries.dead)).toBe(2);
    expect(sum((b) => b.latency.attempts)).toBe(7);
  });

  it("is account-scoped: another account sees none of it", async () => {
    const res = await other.api("GET", "/api/v1/stats?window=30d");
    expect(res.status).toBe(200);
    expect(res.body.totals).toEqual({
      mail: { stored: 0, blocked: 0, processingFailed: 0 },
      deliveries: { succeeded: 0, retrying: 0, dead: 0, pending: 0 },
      latency: { attempts: 0, p50Ms: null, p95Ms: null },
    });
  });

  it("works with a read-only key and refuses a bad window", async () => {
    const read = await callApi(stack.apiUrl, readKey, "GET", "/api/v1/stats");
    expect(read.status).toBe(200);
    expect(read.body.window).toBe("24h");
    expect(read.body.totals.mail.stored).toBe(4);
    const bad = await acct.api("GET", "/api/v1/stats?window=7d");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/^window: must be 24h or 30d/);
  });
});

describe("GET /endpoints/{id}/health", () => {
  it("a failing endpoint: success rate 0, failing since its first failure, the failures with their answer", async () => {
    const res = await acct.api("GET", `/api/v1/endpoints/${ep.bad}/health`);
    expect(res.status).toBe(200);
    const attempts = await stack.prisma.deliveryAttempt.findMany({
      where: { delivery: { endpointId: ep.bad } },
      orderBy: { startedAt: "asc" },
    });
    expect(attempts).toHaveLength(4);
    expect(res.body).toMatchObject({
      endpointId: ep.bad,
      attempts: 4,
      succeeded: 0,
      failed: 4,
      successRate: 0,
      failingSince: attempts[0]?.startedAt.toISOString(),
      backlog: { pending: 0, retrying: 0, nextAttemptAt: null },
      deliveries: { succeeded: 0, retrying: 0, dead: 2, pending: 0 },
    });
    const ms = attempts.map((a) => a.durationMs).sort((a, b) => a - b);
    expect(res.body.latency).toEqual({ attempts: 4, p50Ms: disc(ms, 0.5), p95Ms: disc(ms, 0.95) });
    expect(res.body.lastFailures).toHaveLength(4);
    expect(res.body.lastFailures[0]).toMatchObject({
      statusCode: 503,
      error: "HTTP 503",
      responseExcerpt: "upstream down: try later",
      at: attempts[3]?.startedAt.toISOString(),
    });
    expect(res.body.hourly).toHaveLength(24);
    expect(res.body.hourly.reduce((s: number, h: { failed: number }) => s + h.failed, 0)).toBe(4);
  });

  it("a healthy endpoint: success rate 1, not failing", async () => {
    const res = await callApi(stack.apiUrl, readKey, "GET", `/api/v1/endpoints/${ep.ok}/health`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ attempts: 3, succeeded: 3, failed: 0, successRate: 1, failingSince: null });
    expect(res.body.lastFailures).toEqual([]);
  });

  it("counts the backlog: a delivery whose attempt is still waiting for an answer", async () => {
    ep.slow = await route("slow", "slow", { maxAttempts: 3, timeoutSeconds: 30 });
    await send("slow", "waiting");
    await waitFor(async () => receiver.requests.some((r) => r.path.startsWith("/slow")) || null, {
      what: "the slow endpoint's request",
      timeoutMs: 90_000,
    });
    const res = await acct.api("GET", `/api/v1/endpoints/${ep.slow}/health`);
    expect(res.status).toBe(200);
    const waiting = (await deliveryStatuses(ep.slow)).filter((s) => s === "pending" || s === "retrying").length;
    expect(waiting).toBe(1);
    expect(res.body.backlog.pending + res.body.backlog.retrying).toBe(1);
  });

  it("another account's endpoint is not found; an unknown id neither", async () => {
    expect((await other.api("GET", `/api/v1/endpoints/${ep.bad}/health`)).status).toBe(404);
    expect((await acct.api("GET", "/api/v1/endpoints/ep_nope/health")).status).toBe(404);
  });
});

describe("MCP get_stats and get_endpoint_health", () => {
  it("answer what the REST routes answer, with a read-only key", async () => {
    const mcp = new Client({ name: "stats-test", version: "1.0.0" });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${readKey}` } },
      }),
    );
    try {
      const stats = await mcp.callTool({ name: "get_stats", arguments: { window: "30d" } });
      expect(stats.isError).toBeFalsy();
      const rest = await acct.api("GET", "/api/v1/stats?window=30d");
      expect((stats.structuredContent as { totals: { mail: unknown } }).totals.mail).toEqual(rest.body.totals.mail);
      expect(rest.body.totals.mail.blocked).toBe(1);
      const health = await mcp.callTool({ name: "get_endpoint_health", arguments: { id: ep.bad } });
      expect((health.structuredContent as { failed: number }).failed).toBe(4);
    } finally {
      await mcp.close();
    }
  });
});

describe("the 30-day view's closed days", () => {
  it("are counted once into stats_days and read from there (mail deleted later stays counted)", async () => {
    // One delivered message moved five days back, as if it had arrived then.
    const email = await stack.prisma.email.findFirstOrThrow({ where: { accountId: acct.accountId, subject: "two" } });
    const back = new Date(Date.now() - 5 * 86_400_000);
    await stack.prisma.email.update({ where: { id: email.id }, data: { receivedAt: back } });
    const delivery = await stack.prisma.delivery.findFirstOrThrow({ where: { emailId: email.id } });
    await stack.prisma.delivery.update({ where: { id: delivery.id }, data: { createdAt: back } });
    await stack.prisma.deliveryAttempt.updateMany({ where: { deliveryId: delivery.id }, data: { startedAt: back } });
    const attempt = await stack.prisma.deliveryAttempt.findFirstOrThrow({ where: { deliveryId: delivery.id } });
    const day = new Date(Math.floor(back.getTime() / 86_400_000) * 86_400_000).toISOString();
    // The earlier 30-day requests counted that day already (empty then): a closed day is counted
    // once, so it would stay empty. Start over as a first request would.
    expect(await stack.prisma.statsDay.count({ where: { accountId: acct.accountId } })).toBe(28);
    await stack.prisma.statsDay.deleteMany({ where: { accountId: acct.accountId } });

    const first = await acct.api("GET", "/api/v1/stats?window=30d");
    expect(first.status).toBe(200);
    const bucket = first.body.buckets.find((b: Bucket) => b.start === day) as Bucket;
    expect(bucket).toEqual({
      start: day,
      mail: { stored: 1, blocked: 0, processingFailed: 0 },
      deliveries: { succeeded: 1, retrying: 0, dead: 0, pending: 0 },
      latency: { attempts: 1, p50Ms: attempt.durationMs, p95Ms: attempt.durationMs },
    });
    const kept = await stack.prisma.statsDay.findMany({ where: { accountId: acct.accountId } });
    // 28 closed days (30 minus yesterday and today), the moved one among them.
    expect(kept).toHaveLength(28);
    expect(kept.find((k) => k.day.toISOString() === day)).toMatchObject({ stored: 1, succeeded: 1, failedAttempts: 0 });

    await stack.prisma.email.delete({ where: { id: email.id } });
    const again = await acct.api("GET", "/api/v1/stats?window=30d");
    expect(again.body.buckets.find((b: Bucket) => b.start === day)).toEqual(bucket);
    expect(again.body.totals.mail.stored).toBe(first.body.totals.mail.stored);
    // The other account's closed days are its own.
    await other.api("GET", "/api/v1/stats?window=30d");
    expect(await stack.prisma.statsDay.count({ where: { accountId: other.accountId, stored: { gt: 0 } } })).toBe(0);
  });
});
