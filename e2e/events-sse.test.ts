import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type ApiProcess, openSse, type SseEvent, type SseReader, startApiProcess } from "./live.ts";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * GET /api/v1/events (issue 18) read by a real HTTP client (fetch): email.received when the rule
 * engine stores mail, delivery.succeeded / delivery.dead when the dispatcher records the final
 * outcome, scoped to the key's account, heartbeats, and Last-Event-ID resume across a restart of
 * an API process (its main.ts, shut down by SIGTERM with the stream open).
 */

let stack: Stack;
let receiver: Receiver;
let a: TestAccount;
let b: TestAccount;
const readers: SseReader[] = [];
const DOMAIN_A = "events-example.com";
const DOMAIN_B = "events-other.com";
let n = 0;

const smtp = () =>
  nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true });
const data = (e: SseEvent) =>
  JSON.parse(e.data) as { type: string; accountId: string; emailId: string; deliveryId?: string };

async function open(base: string, key: string, lastEventId?: string) {
  const r = await openSse(`${base}/api/v1/events`, key, lastEventId);
  readers.push(r);
  return r;
}

/** Sends one message over SMTP; resolves with its stored email id. */
async function mail(to: string) {
  const messageId = `<ev-${++n}@sender.example>`;
  await smtp().sendMail({ from: "alice@sender.example", to, subject: `event ${n}`, text: "hi", messageId });
  const row = await waitFor(() => stack.prisma.email.findFirst({ where: { messageId } }), {
    what: `${messageId} stored`,
  });
  return row.id;
}

/** The events of `reader` about `emailId`, once there are `count` of them. */
const eventsFor = (reader: SseReader, emailId: string, count: number) =>
  waitFor(
    async () => {
      const mine = reader.events.filter((e) => data(e).emailId === emailId);
      return mine.length >= count ? mine : null;
    },
    { what: `${count} events of ${emailId}`, timeoutMs: 30_000 },
  );

async function inbox(acct: TestAccount, domainId: string, localPart: string, endpoint?: Record<string, unknown>) {
  let endpointId: string | undefined;
  if (endpoint) {
    const ep = await acct.api("POST", "/api/v1/endpoints", endpoint);
    expect(ep.status).toBe(201);
    endpointId = ep.body.id;
  }
  const addr = await acct.api("POST", "/api/v1/addresses", {
    domainId,
    localPart,
    ...(endpointId ? { endpointId } : {}),
  });
  expect(addr.status).toBe(201);
}

beforeAll(async () => {
  stack = await startStack({ eventsHeartbeatMs: 300 });
  receiver = await startReceiver();
  receiver.respond((req) => ({ status: req.path.startsWith("/fail") ? 500 : 200 }));
  [a, b] = [await stack.account(), await stack.account()];
  for (const [acct, domain] of [
    [a, DOMAIN_A],
    [b, DOMAIN_B],
  ] as const) {
    const d = await acct.api("POST", "/api/v1/domains", { domain });
    expect(d.status).toBe(201);
    await stack.admin("domains", "verify", "--domain", domain, "--force");
    await inbox(acct, d.body.id, "hooks", { name: "ok", url: `${receiver.url}/ok` });
    if (acct === a) await inbox(acct, d.body.id, "dead", { name: "fail", url: `${receiver.url}/fail`, maxAttempts: 1 });
  }
}, 60_000);

afterAll(async () => {
  for (const r of readers) r.close();
  await receiver?.close();
  await stack?.close();
});

describe("GET /api/v1/events", () => {
  it("streams the account's email.received, delivery.succeeded and delivery.dead with ids, and heartbeats", async () => {
    const sa = await open(stack.apiUrl, a.key);
    const sb = await open(stack.apiUrl, b.key);
    expect(sa.status).toBe(200);
    expect(sa.headers.get("content-type")).toMatch(/^text\/event-stream/);
    // Through the same per-key limiter as every /api/v1 request.
    expect(sa.headers.get("ratelimit-limit")).toBeTruthy();
    await waitFor(
      async () => stack.events.listenerCount(a.accountId) === 1 && stack.events.listenerCount(b.accountId) === 1,
      {
        what: "both streams listening",
      },
    );

    const ok = await mail(`hooks@${DOMAIN_A}`);
    const okEvents = await eventsFor(sa, ok, 2);
    expect(okEvents.map((e) => e.event)).toEqual(["email.received", "delivery.succeeded"]);
    for (const e of okEvents) {
      expect(e.id).toMatch(/^\d+-\d+$/);
      expect(data(e)).toMatchObject({ type: e.event, accountId: a.accountId, emailId: ok });
    }
    const delivery = await a.api("GET", `/api/v1/deliveries/${data(okEvents[1]!).deliveryId}`);
    expect(delivery.body).toMatchObject({ emailId: ok, status: "delivered" });

    const dead = await mail(`dead@${DOMAIN_A}`);
    expect((await eventsFor(sa, dead, 2)).map((e) => e.event)).toEqual(["email.received", "delivery.dead"]);

    // B's stream saw none of that; its first event is B's own mail.
    const forB = await mail(`hooks@${DOMAIN_B}`);
    await eventsFor(sb, forB, 2);
    expect(sb.events.every((e) => data(e).accountId === b.accountId && data(e).emailId === forB)).toBe(true);
    expect(sa.events.some((e) => data(e).emailId === forB)).toBe(false);

    await waitFor(async () => sa.comments.includes("heartbeat"), { what: "a heartbeat" });
  });

  it("streams endpoint.failing when an endpoint's circuit opens; the Endpoint shows failingSince", async () => {
    const sa = await open(stack.apiUrl, a.key);
    await waitFor(async () => stack.events.listenerCount(a.accountId) >= 1, { what: "stream listening" });
    const domainId = (await a.api("GET", "/api/v1/domains")).body.data[0].id;
    const ep = await a.api("POST", "/api/v1/endpoints", {
      name: "down",
      url: `${receiver.url}/fail-down`,
      maxAttempts: 1,
    });
    const addr = await a.api("POST", "/api/v1/addresses", { domainId, localPart: "down", endpointId: ep.body.id });
    expect(addr.status).toBe(201);
    expect((await a.api("GET", `/api/v1/endpoints/${ep.body.id}`)).body.failingSince).toBeNull();
    // Five failed attempts in a row (the default threshold), one per message.
    for (let i = 0; i < 5; i++) await mail(`down@${DOMAIN_A}`);
    const event = await waitFor(
      async () => sa.events.find((e) => e.event === "endpoint.failing" && JSON.parse(e.data).endpointId === ep.body.id),
      { what: "endpoint.failing", timeoutMs: 60_000 },
    );
    const got = (await a.api("GET", `/api/v1/endpoints/${ep.body.id}`)).body;
    expect(got.failingSince).toEqual(expect.any(String));
    expect(JSON.parse(event.data)).toMatchObject({ accountId: a.accountId, failingSince: got.failingSince });
  });

  it("is in the OpenAPI document like every route; HEAD answers the headers without a stream", async () => {
    const doc = (await (await fetch(`${stack.apiUrl}/api/v1/openapi.json`)).json()) as any;
    const op = doc.paths["/api/v1/events"].get;
    expect(op.tags).toEqual(["Events"]);
    expect(Object.keys(op.responses["200"].content)).toEqual(["text/event-stream"]);
    expect(op.parameters.map((p: { name: string; in: string }) => [p.in, p.name])).toContainEqual([
      "query",
      "lastEventId",
    ]);
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "429", "503"]));
    const head = await fetch(`${stack.apiUrl}/api/v1/events`, {
      method: "HEAD",
      headers: { authorization: `Bearer ${a.key}` },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toMatch(/^text\/event-stream/);
  });

  it("answers errors as JSON before streaming: no key 401, a bad Last-Event-ID 400; a read-only key may stream", async () => {
    const anon = await fetch(`${stack.apiUrl}/api/v1/events`);
    expect(anon.status).toBe(401);
    expect(await anon.json()).toEqual({ error: expect.stringMatching(/Authorization/) });
    const bad = await fetch(`${stack.apiUrl}/api/v1/events`, {
      headers: { authorization: `Bearer ${a.key}`, "last-event-id": "yesterday" },
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: "Last-Event-ID: must be an event id from this stream, such as 1767225600000-0",
    });
    const readKey = String((await stack.admin("keys", "create", "--account", a.accountId, "--scope", "read")).key);
    const ro = await open(stack.apiUrl, readKey);
    expect(ro.status).toBe(200);
  });

  it("ends the stream of a revoked key within a heartbeat", async () => {
    const created = await stack.admin("keys", "create", "--account", a.accountId, "--scope", "full");
    const s = await open(stack.apiUrl, String(created.key));
    expect(s.status).toBe(200);
    await stack.admin("keys", "revoke", "--key", String(created.id));
    await s.ended;
  });

  it("resumes with Last-Event-ID across a restart of the API process, without repeats or gaps", async () => {
    const api: ApiProcess = await startApiProcess(stack.env);
    const first = await open(api.url, a.key);
    expect(first.status).toBe(200);
    // No Last-Event-ID: the stream starts with new events; wait until it is listening, then send.
    await waitFor(async () => first.comments.includes("connected"), { what: "the stream to open" });
    const before = await mail(`hooks@${DOMAIN_A}`);
    const seen = await eventsFor(first, before, 2);
    expect(first.events.map((e) => data(e).emailId)).toEqual([before, before]);
    const lastId = seen.at(-1)?.id as string;

    // SIGTERM with the stream open: the server ends the stream and the process exits.
    await api.stop();
    await first.ended;

    // Mail while no API runs: its events wait in the account's stream.
    const during = await mail(`hooks@${DOMAIN_A}`);
    await waitFor(
      async () => (await stack.prisma.delivery.findFirst({ where: { emailId: during, status: "delivered" } })) !== null,
      { what: "the delivery while the API is down" },
    );

    const again = await startApiProcess(stack.env, api.port);
    try {
      const resumed = await open(again.url, a.key, lastId);
      expect(resumed.status).toBe(200);
      const events = await eventsFor(resumed, during, 2);
      expect(events.map((e) => e.event)).toEqual(["email.received", "delivery.succeeded"]);
      // Only what came after lastId: nothing of `before` again.
      expect(resumed.events.some((e) => data(e).emailId === before)).toBe(false);
      const ids = resumed.events.map((e) => e.id as string);
      const key = (id: string) => id.split("-").map(Number) as [number, number];
      const after = (x: string, y: string) =>
        key(x)[0] > key(y)[0] || (key(x)[0] === key(y)[0] && key(x)[1] > key(y)[1]);
      expect(ids.every((id, i) => after(id, i === 0 ? lastId : (ids[i - 1] as string)))).toBe(true);

      // The same resume point with the query parameter, for clients that cannot set the header.
      const byQuery = await openSse(`${again.url}/api/v1/events?lastEventId=${lastId}`, a.key);
      readers.push(byQuery);
      expect((await eventsFor(byQuery, during, 2)).map((e) => e.id)).toEqual(events.map((e) => e.id));
    } finally {
      for (const r of readers) r.close();
      await again.stop();
    }
  }, 120_000);
});
