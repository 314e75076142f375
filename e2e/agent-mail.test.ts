import { spawn } from "node:child_process";
import { promises as dns } from "node:dns";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type DnsServer, startDnsServer, startRelay, type TestRelay, waitFor } from "@mailroom/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { dkimVerify } from "mailauth/lib/dkim/verify.js";
import { simpleParser } from "mailparser";
import nodemailer from "nodemailer";
import { type ApiProcess, openSse, startApiProcess } from "./live.ts";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Issue 18, the agent's view: the official MCP SDK client over HTTP (and stdio, through the
 * mailroom-mcp bridge) creates an inbox, waits for mail that arrives by SMTP, replies; the reply
 * leaves through a real SMTP relay DKIM-signed (verified against a loopback DNS server) and the
 * answer threads back. Two API instances (this process's and a separate API process) serve
 * waiters of the same account; another account's waiter never sees that mail.
 */

type Result = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: any };
const CALL = { timeout: 130_000 };

let stack: Stack;
let relay: TestRelay;
let dnsServer: DnsServer;
let replica: ApiProcess;
let a: TestAccount;
let b: TestAccount;
let readKeyA: string;
let dkim: { selector: string };
const clients: Client[] = [];
const latencies: { where: string; ms: number }[] = [];
const DOMAIN_A = "agents-example.com";
const DOMAIN_B = "agents-other.com";

async function mcp(baseUrl: string, key: string): Promise<Client> {
  const client = new Client({ name: "agent-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  clients.push(client);
  return client;
}
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
  (await client.callTool({ name, arguments: args }, undefined, CALL)) as Result;
async function ok(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r = await call(client, name, args);
  if (r.isError) throw new Error(`${name} failed: ${r.content[0]?.text}`);
  return r.structuredContent;
}
async function fails(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r = await call(client, name, args);
  expect(r.isError).toBe(true);
  return String(r.content[0]?.text);
}

/**
 * The MCP SDK checks argument types itself before the tool runs and words the same zod issue as
 * "Input validation error: … <message> at <a[0].b>"; REST says "<a.0.b>: <message>". Same rule,
 * same message: normalise the SDK's wording to compare.
 */
function asRestError(text: string): string {
  const m = /^MCP error -32602: Input validation error: Invalid arguments for tool \w+: (.*) at (\S+)$/.exec(text);
  return m ? `${(m[2] as string).replace(/\[(\d+)\]/g, ".$1")}: ${m[1]}` : text;
}

const smtp = () =>
  nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true });
const relayed = (messageId: string) => relay.messages.filter((m) => m.raw.toString().includes(messageId));

/** Store commit → the waiter has its result: the Email row's createdAt to the moment the call returned. */
async function recordLatency(where: string, emailId: string, returnedAt: number) {
  const row = await stack.prisma.email.findUniqueOrThrow({ where: { id: emailId }, select: { createdAt: true } });
  latencies.push({ where, ms: returnedAt - row.createdAt.getTime() });
}
async function timed(p: Promise<Result>) {
  const r = await p;
  return { r, at: Date.now() };
}

async function verifiedDomain(acct: TestAccount, domain: string) {
  const created = await acct.api("POST", "/api/v1/domains", { domain });
  expect(created.status).toBe(201);
  await stack.admin("domains", "verify", "--domain", domain, "--force");
  return (await acct.api("GET", `/api/v1/domains/${created.body.id}`)).body;
}

beforeAll(async () => {
  [relay, dnsServer] = await Promise.all([startRelay(), startDnsServer()]);
  // The sender as main.ts starts it (startSenderService), on the stack's database and queues.
  stack = await startStack({ outbound: { relayUrl: relay.url, maxAttempts: 3, backoffUnitMs: 20 } });
  [a, b] = [await stack.account(), await stack.account()];
  readKeyA = String((await stack.admin("keys", "create", "--account", a.accountId, "--scope", "read")).key);
  const domA = await verifiedDomain(a, DOMAIN_A);
  dkim = { selector: domA.dkimSelector };
  dnsServer.set(`${domA.dkimSelector}._domainkey.${DOMAIN_A}`, "CNAME", [domA.dkimRecord.name]);
  dnsServer.set(domA.dkimRecord.name, "TXT", [domA.dkimRecord.value]);
  const domB = await verifiedDomain(b, DOMAIN_B);
  expect((await b.api("POST", "/api/v1/addresses", { domainId: domB.id, localPart: "b" })).status).toBe(201);
  // A second API instance: a process of its own, with its own Redis subscription.
  replica = await startApiProcess(stack.env);
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await replica?.stop();
  await relay?.close();
  await dnsServer?.close();
  await stack?.close();
  if (latencies.length) {
    const sorted = latencies.map((l) => l.ms).sort((x, y) => x - y);
    const median = sorted[Math.floor(sorted.length / 2)];
    // A measurement, not an assertion (the machine is shared): quoted in the report.
    console.log(
      `wait_for_email latency, store commit → result (ms): median ${median}, max ${sorted.at(-1)}, n=${sorted.length}\n` +
        latencies.map((l) => `  ${l.where}: ${l.ms}`).join("\n"),
    );
  }
});

describe("an agent over MCP (HTTP)", () => {
  let agent: Client;
  let inbound: any;
  let reply: any;

  beforeAll(async () => {
    agent = await mcp(stack.apiUrl, a.key);
  });

  it("creates an inbox, waits, and the wait returns the message sent by SMTP", async () => {
    const domains = await ok(agent, "list_domains");
    const inbox = await ok(agent, "create_inbox", { domainId: domains.data[0].id, localPart: "agent" });
    expect(inbox.localPart).toBe("agent");

    // No receivedAfter: only mail stored after the call started. Send once the wait is listening.
    const waiting = timed(call(agent, "wait_for_email", { address: `agent@${DOMAIN_A}`, timeoutSeconds: 60 }));
    await waitFor(async () => stack.events.listenerCount(a.accountId) === 1, { what: "the waiter" });
    await smtp().sendMail({
      from: "Shop <noreply@shop.example>",
      to: `agent@${DOMAIN_A}`,
      subject: "Your confirmation code 493817",
      text: "Your code is 493817.",
      messageId: "<code-1@shop.example>",
      attachments: [{ filename: "terms.txt", content: "terms v1\n" }],
    });
    const { r, at } = await waiting;
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent.timedOut).toBe(false);
    inbound = r.structuredContent.email;
    expect(inbound).toMatchObject({
      direction: "inbound",
      fromAddress: "noreply@shop.example",
      subject: "Your confirmation code 493817",
      messageId: "<code-1@shop.example>",
      attachments: [{ filename: "terms.txt", size: 9, stored: true }],
    });
    expect(inbound.textBody).toContain("493817");
    // The same object get_email returns.
    expect(await ok(agent, "get_email", { id: inbound.id })).toEqual(inbound);
    await recordLatency("HTTP, this API", inbound.id, at);
    expect(stack.events.listenerCount(a.accountId)).toBe(0);
  });

  it("replies in the thread with cc and both kinds of attachment; the relay gets it DKIM-signed once", async () => {
    const args = {
      id: inbound.id,
      text: "Confirmed, thanks.",
      cc: ["ops@third.example"],
      attachments: [
        { emailId: inbound.id, index: 0 },
        { filename: "note.txt", contentType: "text/plain", content: Buffer.from("hello\n").toString("base64") },
      ],
      idempotencyKey: "agent-reply-1",
    };
    reply = await ok(agent, "reply_to_email", args);
    expect(reply).toMatchObject({
      direction: "outbound",
      threadId: inbound.threadId,
      inReplyTo: "<code-1@shop.example>",
      fromAddress: `agent@${DOMAIN_A}`,
      toAddresses: ["noreply@shop.example"],
      ccAddresses: ["ops@third.example"],
      subject: "Re: Your confirmation code 493817",
      attachments: [
        { filename: "terms.txt", size: 9, stored: true },
        { filename: "note.txt", contentType: "text/plain", size: 6, stored: true },
      ],
      send: { status: "queued" },
    });
    // A retry with the same key is the first result, and nothing is sent twice.
    expect(await ok(agent, "reply_to_email", args)).toEqual(reply);

    const sent = await waitFor(
      async () => {
        const e = await ok(agent, "get_email", { id: reply.id });
        return e.send.status === "sent" ? e : null;
      },
      { what: "the reply to be relayed" },
    );
    expect(sent.send.attempts).toBe(1);
    const [msg, ...more] = relayed(reply.messageId);
    expect(more).toHaveLength(0);
    expect([...msg!.rcptTo].sort()).toEqual(["noreply@shop.example", "ops@third.example"]);
    const parsed = await simpleParser(msg!.raw);
    expect(parsed.inReplyTo).toBe("<code-1@shop.example>");
    expect(parsed.subject).toBe("Re: Your confirmation code 493817");
    expect(parsed.attachments.map((x) => [x.filename, x.content.toString()])).toEqual([
      ["terms.txt", "terms v1\n"],
      ["note.txt", "hello\n"],
    ]);
    const resolver = new dns.Resolver();
    resolver.setServers([dnsServer.server]);
    const verified = await dkimVerify(msg!.raw, {
      resolver: ((name: string, type: string) => resolver.resolve(name, type)) as never,
    });
    expect(verified.results[0]).toMatchObject({
      signingDomain: DOMAIN_A,
      selector: dkim.selector,
      status: { result: "pass" },
    });
  });

  it("the answer to the reply threads back, and wait_for_email finds it (receivedAfter covers mail already there)", async () => {
    const before = new Date().toISOString();
    // Sent and stored before the wait starts: the one look in Postgres at the start finds it.
    await smtp().sendMail({
      from: "noreply@shop.example",
      to: `agent@${DOMAIN_A}`,
      subject: "Re: Re: Your confirmation code 493817",
      text: "Welcome aboard.",
      messageId: "<code-2@shop.example>",
      inReplyTo: reply.messageId,
    });
    await waitFor(() => stack.prisma.email.findFirst({ where: { messageId: "<code-2@shop.example>" } }), {
      what: "the answer stored",
    });
    const got = await ok(agent, "wait_for_email", {
      from: "@shop.example",
      subjectContains: "re: re:",
      receivedAfter: before,
      timeoutSeconds: 5,
    });
    expect(got.email).toMatchObject({ messageId: "<code-2@shop.example>", threadId: inbound.threadId });
    const thread = await ok(agent, "get_thread", { id: inbound.threadId });
    expect(thread.data.map((e: { direction: string }) => e.direction)).toEqual(["inbound", "outbound", "inbound"]);
  });

  it("a wait that sees nothing matching ends with timedOut, and bad filters get the usual errors", async () => {
    expect(await ok(agent, "wait_for_email", { subjectContains: "never sent", timeoutSeconds: 1 })).toEqual({
      email: null,
      timedOut: true,
    });
    expect(await fails(agent, "wait_for_email", { timeoutSeconds: 121 })).toMatch(/at most 120 at timeoutSeconds/);
    expect(await fails(agent, "wait_for_email", { receivedAfter: "yesterday" })).toMatch(/ISO 8601/);
    expect(await fails(agent, "wait_for_email", { from: "not an address" })).toMatch(/email address or @domain/);
  });
});

describe("send_email and reply_to_email share the REST service layer", () => {
  let agent: Client;
  let readOnly: Client;
  let otherEmailId: string;

  beforeAll(async () => {
    agent = await mcp(stack.apiUrl, a.key);
    readOnly = await mcp(stack.apiUrl, readKeyA);
    await smtp().sendMail({
      from: "x@y.example",
      to: `b@${DOMAIN_B}`,
      subject: "for b",
      text: "b",
      messageId: "<b-0@y.example>",
    });
    otherEmailId = (
      await waitFor(() => stack.prisma.email.findFirst({ where: { messageId: "<b-0@y.example>" } }), {
        what: "b's mail",
      })
    ).id;
  });

  it("the same validation errors as POST /emails and POST /emails/{id}/reply", async () => {
    const cases: [string, string, Record<string, unknown>][] = [
      ["send_email", "/emails", { from: `agent@${DOMAIN_A}`, to: "x@y.example", subject: "no body" }],
      ["send_email", "/emails", { from: `nobody@${DOMAIN_A}`, to: "x@y.example", subject: "s", text: "t" }],
      ["send_email", "/emails", { from: `agent@${DOMAIN_B}`, to: "x@y.example", subject: "s", text: "t" }],
      [
        "send_email",
        "/emails",
        {
          from: `agent@${DOMAIN_A}`,
          to: "x@y.example",
          subject: "s",
          text: "t",
          attachments: [{ emailId: otherEmailId, index: 0 }],
        },
      ],
      [
        "send_email",
        "/emails",
        { from: `agent@${DOMAIN_A}`, to: "x@y.example", subject: "s", text: "t", attachments: [{}] },
      ],
      ["reply_to_email", `/emails/${otherEmailId}/reply`, { text: "steal" }],
    ];
    for (const [tool, path, body] of cases) {
      const rest = await a.api("POST", `/api/v1${path}`, body);
      expect(rest.status).toBeGreaterThanOrEqual(400);
      const args = tool === "reply_to_email" ? { id: otherEmailId, ...body } : body;
      expect([tool, body, asRestError(await fails(agent, tool, args))]).toEqual([tool, body, rest.body.error]);
    }
  });

  it("idempotency keys are the REST Idempotency-Key: same key and request replay, another request is refused", async () => {
    const body = { from: `agent@${DOMAIN_A}`, to: "erin@fifth.example", subject: "Hello", text: "Hi" };
    const first = await ok(agent, "send_email", { ...body, idempotencyKey: "send-1" });
    expect(first).toMatchObject({ direction: "outbound", subject: "Hello", send: { status: "queued" } });
    expect(await ok(agent, "send_email", { ...body, idempotencyKey: "send-1" })).toEqual(first);
    // Over REST with the same key and body: the same request, replayed.
    const res = await fetch(`${stack.apiUrl}/api/v1/emails`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json", "idempotency-key": "send-1" },
      body: JSON.stringify(body),
    });
    expect(res.headers.get("idempotent-replayed")).toBe("true");
    expect(((await res.json()) as { id: string }).id).toBe(first.id);
    expect(await fails(agent, "send_email", { ...body, text: "other", idempotencyKey: "send-1" })).toBe(
      "Idempotency-Key: already used with a different request",
    );
    expect(await fails(agent, "send_email", { ...body, idempotencyKey: "has space" })).toBe(
      "Idempotency-Key: must be 1 to 255 visible ASCII characters",
    );
    await waitFor(async () => relayed(first.messageId).length > 0, { what: "the new message relayed" });
    expect(relayed(first.messageId)).toHaveLength(1);
    expect(await stack.prisma.email.count({ where: { accountId: a.accountId, subject: "Hello" } })).toBe(1);
  });

  it("a read-only key may wait but not send or reply", async () => {
    const before = await stack.prisma.email.count({ where: { accountId: a.accountId, direction: "outbound" } });
    const refused = /read-only.*full-access key is needed/;
    expect(
      await fails(readOnly, "send_email", { from: `agent@${DOMAIN_A}`, to: "x@y.example", subject: "s", text: "t" }),
    ).toMatch(refused);
    const anyEmail = await stack.prisma.email.findFirstOrThrow({
      where: { accountId: a.accountId, direction: "inbound" },
    });
    expect(await fails(readOnly, "reply_to_email", { id: anyEmail.id, text: "t" })).toMatch(refused);
    expect(await stack.prisma.email.count({ where: { accountId: a.accountId, direction: "outbound" } })).toBe(before);
    expect(await ok(readOnly, "wait_for_email", { subjectContains: "nothing", timeoutSeconds: 1 })).toEqual({
      email: null,
      timedOut: true,
    });
  });
});

describe("waiters on two API instances", () => {
  it("each serves waiters of the same account; another account's waiters never see that mail", async () => {
    const [here, there] = [await mcp(stack.apiUrl, a.key), await mcp(replica.url, a.key)];
    const [bHere, bThere] = [await mcp(stack.apiUrl, b.key), await mcp(replica.url, b.key)];
    // The replica's waiters use receivedAfter (their registration cannot be observed from here):
    // whether the first look or the event finds the message, it must be the message.
    const since = new Date().toISOString();
    const filter = { address: `agent@${DOMAIN_A}`, subjectContains: "replicas" };
    const waits = [
      timed(call(here, "wait_for_email", { ...filter, timeoutSeconds: 60 })),
      timed(call(here, "wait_for_email", { ...filter, timeoutSeconds: 60 })),
      timed(call(there, "wait_for_email", { ...filter, receivedAfter: since, timeoutSeconds: 60 })),
      timed(call(there, "wait_for_email", { ...filter, receivedAfter: since, timeoutSeconds: 60 })),
    ];
    // Account B waits for any mail at all, on both instances, from before A's message.
    const bWaits = [
      call(bHere, "wait_for_email", { timeoutSeconds: 90 }),
      call(bThere, "wait_for_email", { receivedAfter: since, timeoutSeconds: 90 }),
    ];
    await waitFor(async () => stack.events.listenerCount(a.accountId) === 2, { what: "waiters here" });
    await waitFor(async () => stack.events.listenerCount(b.accountId) === 1, { what: "b's waiter here" });
    await smtp().sendMail({
      from: "carol@sender.example",
      to: `agent@${DOMAIN_A}`,
      subject: "Two replicas",
      text: "hi",
      messageId: "<replicas@sender.example>",
    });
    const results = await Promise.all(waits);
    for (const [i, { r, at }] of results.entries()) {
      expect(r.structuredContent?.email?.messageId).toBe("<replicas@sender.example>");
      await recordLatency(i < 2 ? "HTTP, this API" : "HTTP, the other API process", r.structuredContent.email.id, at);
    }
    // A's message was stored while B waited; B's waiters return B's own next message, not A's.
    await smtp().sendMail({
      from: "dan@sender.example",
      to: `b@${DOMAIN_B}`,
      subject: "for b",
      text: "b",
      messageId: "<b-1@sender.example>",
    });
    for (const r of await Promise.all(bWaits)) {
      expect(r.structuredContent?.email).toMatchObject({
        messageId: "<b-1@sender.example>",
        toAddresses: [`b@${DOMAIN_B}`],
      });
    }
  });
});

describe("delivery events of forwarded mail", () => {
  it("the outbound sender publishes delivery.succeeded when it has forwarded to an email endpoint", async () => {
    const ep = await a.api("POST", "/api/v1/endpoints", { type: "email", url: "mailto:archive@archive.example" });
    expect(ep.status).toBe(201);
    const domainId = (await a.api("GET", "/api/v1/domains")).body.data[0].id;
    const addr = await a.api("POST", "/api/v1/addresses", { domainId, localPart: "fwd", endpointId: ep.body.id });
    expect(addr.status).toBe(201);
    const events = await openSse(`${stack.apiUrl}/api/v1/events`, a.key);
    try {
      await waitFor(async () => events.comments.includes("connected"), { what: "the stream" });
      await smtp().sendMail({
        from: "gina@sender.example",
        to: `fwd@${DOMAIN_A}`,
        subject: "Archive me",
        text: "x",
        messageId: "<fwd-1@sender.example>",
      });
      const delivered = await waitFor(async () => events.events.find((e) => e.event === "delivery.succeeded"), {
        what: "delivery.succeeded of the forward",
        timeoutMs: 30_000,
      });
      const { deliveryId, emailId } = JSON.parse(delivered.data);
      expect((await a.api("GET", `/api/v1/deliveries/${deliveryId}`)).body).toMatchObject({
        emailId,
        endpointId: ep.body.id,
        status: "delivered",
      });
      expect(events.events.map((e) => e.event)).toEqual(["email.received", "delivery.succeeded"]);
    } finally {
      events.close();
    }
  });
});

describe("an agent over stdio (mailroom-mcp)", () => {
  it("waits through the bridge, receives by SMTP and replies; the reply is relayed", async () => {
    const bin = resolve(process.cwd(), "node_modules/.bin/mailroom-mcp");
    const agent = new Client({ name: "agent-stdio", version: "1.0.0" });
    await agent.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [bin],
        env: { PATH: process.env.PATH ?? "", MAILROOM_API_URL: replica.url, MAILROOM_API_KEY: a.key },
        stderr: "pipe",
      }),
    );
    clients.push(agent);
    const since = new Date().toISOString();
    const waiting = timed(
      call(agent, "wait_for_email", { address: `agent+stdio@${DOMAIN_A}`, receivedAfter: since, timeoutSeconds: 60 }),
    );
    await smtp().sendMail({
      from: "frank@sender.example",
      to: `agent+stdio@${DOMAIN_A}`,
      subject: "Over stdio",
      text: "ping",
      messageId: "<stdio-1@sender.example>",
    });
    const { r, at } = await waiting;
    expect(r.isError).toBeFalsy();
    const email = r.structuredContent.email;
    expect(email).toMatchObject({ messageId: "<stdio-1@sender.example>", toAddresses: [`agent+stdio@${DOMAIN_A}`] });
    await recordLatency("stdio bridge → the other API process", email.id, at);

    const reply = await ok(agent, "reply_to_email", { id: email.id, text: "pong" });
    expect(reply).toMatchObject({ threadId: email.threadId, inReplyTo: "<stdio-1@sender.example>" });
    await waitFor(async () => relayed(reply.messageId).length === 1, { what: "the stdio reply relayed" });
    expect(relayed(reply.messageId)[0]!.rcptTo).toEqual(["frank@sender.example"]);
  });
});

// Keeps `spawn` referenced for readers looking for how processes start: see ./live.ts.
void spawn;
