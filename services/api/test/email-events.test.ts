import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, startReceiver, startRelay, type TestRelay, waitFor } from "@mailroom/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import nodemailer from "nodemailer";

/**
 * GET /emails/{id}/events and the MCP tool get_email_timeline: mail arrives over SMTP, one message
 * goes to an endpoint that answers 503 until its delivery is dead, one is routed by a shield rule
 * to an endpoint that answers 200. The timeline is checked against the rows in Postgres.
 */
let stack: Stack;
let receiver: Receiver;
let relay: TestRelay;
let acct: TestAccount;
let other: TestAccount;
let readKey: string;
let mcp: Client;
let mcpOther: Client;
const domain = "timeline-example.com";
const HELO = "client.timeline-sender.example";
let ruleId: string;
let failingEp: string;
let okEp: string;

async function connect(key: string) {
  const c = new Client({ name: "timeline-test", version: "1.0.0" });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  return c;
}

beforeAll(async () => {
  relay = await startRelay();
  stack = await startStack({ backoffUnitMs: 20, outbound: { relayUrl: relay.url, backoffUnitMs: 20 } });
  receiver = await startReceiver();
  receiver.respond((req) =>
    req.path === "/failing"
      ? { status: 503, body: `down for maintenance ${"x".repeat(500)}` }
      : { status: 200, body: "thanks" },
  );
  acct = await stack.account({ plan: "scale" });
  other = await stack.account();
  readKey = String((await stack.admin("keys", "create", "--account", acct.accountId, "--scope", "read")).key);
  const dom = await acct.api("POST", "/api/v1/domains", { domain });
  expect(dom.status).toBe(201);
  await stack.admin("domains", "verify", "--domain", domain, "--force");
  const ep = async (path: string, maxAttempts: number) =>
    (await acct.api("POST", "/api/v1/endpoints", { name: path, url: `${receiver.url}/${path}`, maxAttempts })).body
      .id as string;
  failingEp = await ep("failing", 2);
  okEp = await ep("ok", 1);
  expect(
    (await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "inbox", endpointId: failingEp }))
      .status,
  ).toBe(201);
  const rule = await acct.api("POST", "/api/v1/shield-rules", {
    name: "Invoices to accounting",
    action: "route",
    conditions: [
      { field: "subject", operator: "contains", value: "invoice" },
      { field: "from_domain", operator: "equals", value: "sender.example" },
    ],
    endpointIds: [okEp],
  });
  expect(rule.status).toBe(201);
  ruleId = rule.body.id;
  mcp = await connect(acct.key);
  mcpOther = await connect(other.key);
});
afterAll(async () => {
  await mcp?.close().catch(() => undefined);
  await mcpOther?.close().catch(() => undefined);
  await receiver?.close();
  await stack?.close();
  await relay?.close();
});

async function send(subject: string) {
  const t = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true, name: HELO });
  await t.sendMail({ from: "Alice <alice@sender.example>", to: `inbox@${domain}`, subject, text: "hello\n" });
  t.close();
  return waitFor(
    async () => {
      const e = await stack.prisma.email.findFirst({ where: { accountId: acct.accountId, subject } });
      if (!e) return null;
      const ds = await stack.prisma.delivery.findMany({ where: { emailId: e.id } });
      return ds.length > 0 && ds.every((d) => d.status === "delivered" || d.status === "dead") ? e : null;
    },
    { what: `"${subject}" stored and its deliveries finished`, timeoutMs: 90_000 },
  );
}

const events = (id: string, who = acct) => who.api("GET", `/api/v1/emails/${id}/events`);

describe("GET /emails/{id}/events", () => {
  let failedId: string;
  let routedId: string;
  beforeAll(async () => {
    failedId = (await send("plain hello")).id;
    routedId = (await send("Invoice 42")).id;
  });

  it("tells a failed message's story from the stored rows: received, verdicts, no rule, stored, dead delivery", async () => {
    const r = await events(failedId);
    expect(r.status).toBe(200);
    const e = await stack.prisma.email.findUniqueOrThrow({ where: { id: failedId }, include: { spool: true } });
    expect(r.body.emailId).toBe(failedId);
    expect(r.body.direction).toBe("inbound");
    expect(r.body.events.map((x: { type: string }) => x.type)).toEqual([
      "received",
      "authenticated",
      "shield",
      "stored",
      "delivery",
    ]);
    const [received, auth, shield, stored, delivery] = r.body.events;
    expect(received).toEqual({
      type: "received",
      at: e.spool?.receivedAt.toISOString(),
      mailFrom: "alice@sender.example",
      recipient: `inbox@${domain}`,
      clientIp: e.spool?.remoteIp,
      helo: HELO,
      tls: null,
      sizeBytes: e.spool?.size,
    });
    expect(received.clientIp).toMatch(/127\.0\.0\.1/);
    expect(auth).toMatchObject({
      spf: { verdict: e.spfVerdict },
      dkim: { verdict: e.dkimVerdict },
      dmarc: { verdict: e.dmarcVerdict, overriddenByArc: false },
      arc: { verdict: e.arcVerdict },
      spam: { verdict: e.spamVerdict },
      virus: { verdict: e.virusVerdict },
    });
    expect(shield).toMatchObject({
      decision: "none",
      rule: null,
      reason: expect.stringMatching(/No enabled shield rule/),
    });
    expect(stored).toMatchObject({ at: e.createdAt.toISOString(), threadId: e.threadId, processingTries: 1 });

    const d = await stack.prisma.delivery.findFirstOrThrow({
      where: { emailId: failedId },
      include: { attempts: { orderBy: { number: "asc" } } },
    });
    expect(delivery).toMatchObject({
      deliveryId: d.id,
      endpoint: { id: failingEp, name: "failing", type: "webhook" },
      status: "dead",
      attemptCount: 2,
      maxAttempts: 2,
    });
    expect(d.attempts).toHaveLength(2);
    expect(delivery.attempts).toEqual(
      d.attempts.map((a) => ({
        number: a.number,
        statusCode: 503,
        error: a.error,
        durationMs: a.durationMs,
        responseExcerpt: (a.responseBody ?? "").slice(0, 300),
        startedAt: a.startedAt.toISOString(),
        finishedAt: a.finishedAt.toISOString(),
      })),
    );
    expect(delivery.attempts[0].responseExcerpt).toMatch(/^down for maintenance x+$/);
    expect(delivery.attempts[0].responseExcerpt).toHaveLength(300);
  });

  it("names the shield rule that decided and why, each condition re-checked, and the delivered attempt", async () => {
    const r = await events(routedId);
    expect(r.status).toBe(200);
    const shield = r.body.events.find((x: { type: string }) => x.type === "shield");
    expect(shield).toMatchObject({
      decision: "route",
      action: "route",
      rule: {
        id: ruleId,
        name: "Invoices to accounting",
        changedSince: false,
        deleted: false,
        conditions: [
          { field: "subject", operator: "contains", value: "invoice", matched: true },
          { field: "from_domain", operator: "equals", value: "sender.example", matched: true },
        ],
      },
      reason: expect.stringMatching(/Rule "Invoices to accounting" matched all 2 condition/),
    });
    const deliveries = r.body.events.filter((x: { type: string }) => x.type === "delivery");
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ endpoint: { id: okEp }, status: "delivered", attemptCount: 1 });
    expect(deliveries[0].attempts).toMatchObject([
      { number: 1, statusCode: 200, error: null, responseExcerpt: "thanks" },
    ]);
  });

  it("says so when the deciding rule was edited or deleted since", async () => {
    expect((await acct.api("PATCH", `/api/v1/shield-rules/${ruleId}`, { name: "Renamed rule" })).status).toBe(200);
    const edited = (await events(routedId)).body.events.find((x: { type: string }) => x.type === "shield");
    expect(edited.rule).toMatchObject({ name: "Renamed rule", changedSince: true, deleted: false });
    expect(edited.reason).toMatch(/edited since/);
    expect((await acct.api("DELETE", `/api/v1/shield-rules/${ruleId}`)).status).toBe(204);
    const gone = (await events(routedId)).body.events.find((x: { type: string }) => x.type === "shield");
    expect(gone).toMatchObject({
      decision: "route",
      rule: { id: ruleId, name: null, deleted: true, changedSince: true, conditions: [] },
    });
  });

  it("answers another account's email, an unknown id and an id of the wrong kind with 404", async () => {
    for (const [who, id] of [
      [other, failedId],
      [acct, "em_doesnotexist"],
      [acct, failingEp],
    ] as const) {
      const r = await events(id, who);
      expect([id, r.status, r.body]).toEqual([id, 404, { error: "Email not found" }]);
    }
  });

  it("works with a read-only key (a GET), and the MCP tool returns the same timeline", async () => {
    const viaRead = await fetch(`${stack.apiUrl}/api/v1/emails/${failedId}/events`, {
      headers: { Authorization: `Bearer ${readKey}` },
    });
    expect(viaRead.status).toBe(200);
    const rest = (await events(failedId)).body;
    expect(await viaRead.json()).toEqual(rest);
    const tool = (await mcp.callTool({ name: "get_email_timeline", arguments: { id: failedId } })) as {
      isError?: boolean;
      structuredContent?: unknown;
    };
    expect(tool.isError).toBeFalsy();
    expect(tool.structuredContent).toEqual(rest);
    const refused = (await mcpOther.callTool({ name: "get_email_timeline", arguments: { id: failedId } })) as {
      isError?: boolean;
      content: { text: string }[];
    };
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toMatch(/Email not found/);
  });

  it("an outbound reply: stored, then sent through the relay, as the row says", async () => {
    const reply = await acct.api("POST", `/api/v1/emails/${failedId}/reply`, { text: "On it.\n" });
    expect(reply.status).toBe(201);
    const sent = await waitFor(
      async () => {
        const e = await stack.prisma.email.findUnique({ where: { id: reply.body.id } });
        return e?.sendStatus === "sent" ? e : null;
      },
      { what: "the reply sent through the relay", timeoutMs: 90_000 },
    );
    const r = await events(sent.id);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      emailId: sent.id,
      direction: "outbound",
      events: [
        { type: "stored", at: sent.createdAt.toISOString(), threadId: sent.threadId, processingTries: null },
        {
          type: "sent",
          at: sent.sentAt?.toISOString(),
          status: "sent",
          attempts: sent.sendAttempts,
          lastReply: sent.sendLastReply,
          sentAt: sent.sentAt?.toISOString(),
        },
      ],
    });
    expect(relay.messages.length).toBeGreaterThan(0);
  });
});
