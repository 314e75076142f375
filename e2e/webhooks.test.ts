import { createHmac, timingSafeEqual } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Delivery history, replay, the test operation and secret rotation over the real API, with mail
 * arriving over SMTP and going out through the dispatcher to real receivers. Backoff unit 20 ms;
 * the dispatcher's sweeper runs every 250 ms.
 */
let stack: Stack;
let receiver: Receiver;
let other: Receiver;
let acct: TestAccount;
let domainId: string;
let domain: string;
let sent = 0;

beforeAll(async () => {
  stack = await startStack({ backoffUnitMs: 20, dispatcher: { sweepIntervalMs: 250, sweepGraceMs: 0 } });
  [receiver, other] = await Promise.all([startReceiver(), startReceiver()]);
  acct = await stack.account();
  domain = "hooks-e2e-example.com";
  const dom = await acct.api("POST", "/api/v1/domains", { domain });
  expect(dom.status).toBe(201);
  domainId = dom.body.id;
  await stack.admin("domains", "verify", "--domain", domain, "--force");
});
afterAll(async () => {
  await Promise.all([receiver?.close(), other?.close()]);
  await stack?.close();
});
beforeEach(() => {
  receiver.requests.length = 0;
  other.requests.length = 0;
  receiver.respond(() => ({ status: 200, body: "ok" }));
});

function verify(secret: string, header: string, body: Buffer): boolean {
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  if (!t) return false;
  const expected = createHmac("sha256", secret).update(`${t}.`).update(body).digest();
  return [...header.matchAll(/v1=([0-9a-f]{64})/g)].some((m) =>
    timingSafeEqual(expected, Buffer.from(m[1] as string, "hex")),
  );
}

/** An endpoint, and an address routed to it; returns the endpoint (with its secret) and the address. */
async function routed(endpoint: Record<string, unknown>) {
  const ep = await acct.api("POST", "/api/v1/endpoints", endpoint);
  expect(ep.status).toBe(201);
  const localPart = `box${Math.random().toString(36).slice(2, 10)}`;
  const addr = await acct.api("POST", "/api/v1/addresses", { domainId, localPart, endpointId: ep.body.id });
  expect(addr.status).toBe(201);
  return { ep: ep.body as { id: string; secret: string }, to: `${localPart}@${domain}` };
}

async function mail(to: string, subject = "Hello") {
  const transport = nodemailer.createTransport({
    host: "127.0.0.1",
    port: stack.smtpPort,
    secure: false,
    ignoreTLS: true,
  });
  sent++;
  await transport.sendMail({
    from: "alice@sender.example",
    to,
    subject,
    text: "Body.\n",
    messageId: `<hooks-${sent}-${Date.now()}@sender.example>`,
  });
  transport.close();
}

const deliveryOf = (endpointId: string, status: string) =>
  waitFor(
    async () => {
      const list = await acct.api("GET", `/api/v1/deliveries?endpointId=${endpointId}&status=${status}`);
      return list.body.data?.[0];
    },
    { what: `a ${status} delivery for ${endpointId}` },
  );

describe("delivery history", () => {
  it("GET /deliveries/{id} shows every attempt of one delivery id (500, then 200)", async () => {
    receiver.respond((_r, i) =>
      i === 0 ? { status: 500, body: "x".repeat(10_000) } : { status: 200, body: "thanks" },
    );
    const { ep, to } = await routed({ url: `${receiver.url}/h`, maxAttempts: 3 });
    await mail(to);
    const item = await deliveryOf(ep.id, "delivered");
    expect(item).toMatchObject({ endpointId: ep.id, status: "delivered", attemptCount: 2, maxAttempts: 3 });
    expect(item.id).toMatch(/^dlv_/);
    expect(item.emailId).toMatch(/^em_/);
    expect(item).not.toHaveProperty("attempts");

    const got = await acct.api("GET", `/api/v1/deliveries/${item.id}`);
    expect(got.status).toBe(200);
    expect(got.body.attempts).toHaveLength(2);
    expect(got.body.attempts[0]).toMatchObject({ number: 1, statusCode: 500, error: "HTTP 500" });
    expect(got.body.attempts[0].responseBody).toBe("x".repeat(4096));
    expect(got.body.attempts[1]).toMatchObject({ number: 2, statusCode: 200, error: null, responseBody: "thanks" });
    for (const a of got.body.attempts) {
      expect(a.durationMs).toBeGreaterThanOrEqual(0);
      expect(Date.parse(a.finishedAt)).toBeGreaterThanOrEqual(Date.parse(a.startedAt));
    }
    expect(receiver.requests.map((r) => r.headers["x-service-delivery-id"])).toEqual([item.id, item.id]);
    expect(got.body.deliveredAt).not.toBeNull();

    const byEmail = await acct.api("GET", `/api/v1/deliveries?emailId=${item.emailId}`);
    expect(byEmail.body.data.map((d: { id: string }) => d.id)).toEqual([item.id]);
  });

  it("lists newest first with keyset pagination, filters, and refuses a bad cursor", async () => {
    const { ep, to } = await routed({ url: receiver.url });
    for (let i = 0; i < 3; i++) await mail(to, `page ${i}`);
    await waitFor(async () => {
      const r = await acct.api("GET", `/api/v1/deliveries?endpointId=${ep.id}&status=delivered`);
      return r.body.data.length === 3;
    });
    const p1 = await acct.api("GET", `/api/v1/deliveries?endpointId=${ep.id}&limit=2`);
    expect(p1.status).toBe(200);
    expect(p1.body.data).toHaveLength(2);
    expect(p1.body.nextCursor).toEqual(expect.any(String));
    const p2 = await acct.api("GET", `/api/v1/deliveries?endpointId=${ep.id}&limit=2&cursor=${p1.body.nextCursor}`);
    expect(p2.body.data).toHaveLength(1);
    expect(p2.body.nextCursor).toBeNull();
    const all = [...p1.body.data, ...p2.body.data];
    expect(new Set(all.map((d) => d.id)).size).toBe(3);
    const times = all.map((d) => Date.parse(d.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    expect((await acct.api("GET", `/api/v1/deliveries?endpointId=${ep.id}&status=dead`)).body.data).toEqual([]);
    const bad = await acct.api("GET", "/api/v1/deliveries?cursor=not-a-cursor");
    expect(bad).toMatchObject({ status: 400, body: { error: "Invalid cursor" } });
    const badStatus = await acct.api("GET", "/api/v1/deliveries?status=lost");
    expect(badStatus.status).toBe(400);
    expect(badStatus.body.error).toMatch(/^status: /);

    // Another account sees none of it.
    const stranger = await stack.account();
    expect((await stranger.api("GET", "/api/v1/deliveries")).body.data).toEqual([]);
    expect((await stranger.api("GET", `/api/v1/deliveries/${all[0].id}`)).status).toBe(404);
    expect((await stranger.api("POST", `/api/v1/deliveries/${all[0].id}/retry`)).status).toBe(404);
  });
});

describe("replay: POST /deliveries/{id}/retry", () => {
  it("re-opens a dead delivery with a fresh budget under the same id, and a delivered one too", async () => {
    receiver.respond(() => ({ status: 503 }));
    const { ep, to } = await routed({ url: receiver.url, maxAttempts: 2 });
    await mail(to);
    const dead = await deliveryOf(ep.id, "dead");
    expect(dead).toMatchObject({ attemptCount: 2, maxAttempts: 2, lastStatusCode: 503, nextAttemptAt: null });

    receiver.respond((_r, i) => (i === 2 ? { status: 500 } : { status: 200 })); // 3rd request fails once more
    const retried = await acct.api("POST", `/api/v1/deliveries/${dead.id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: dead.id, status: "pending", attemptCount: 2, maxAttempts: 4 });
    const done = await waitFor(async () => {
      const r = await acct.api("GET", `/api/v1/deliveries/${dead.id}`);
      return r.body.status === "delivered" ? r.body : null;
    });
    expect(done.attempts.map((a: { number: number; statusCode: number }) => [a.number, a.statusCode])).toEqual([
      [1, 503],
      [2, 503],
      [3, 500],
      [4, 200],
    ]);
    expect(receiver.requests.map((r) => r.headers["x-service-delivery-id"])).toEqual([
      dead.id,
      dead.id,
      dead.id,
      dead.id,
    ]);

    // Delivered can be replayed too (the receiver lost it); pending/retrying cannot.
    const again = await acct.api("POST", `/api/v1/deliveries/${dead.id}/retry`);
    expect(again.body).toMatchObject({ status: "pending", maxAttempts: 6 });
    await waitFor(async () => (await acct.api("GET", `/api/v1/deliveries/${dead.id}`)).body.status === "delivered");
    expect(receiver.requests).toHaveLength(5);
  });

  it("refuses a delivery that is still scheduled (409) and an unknown one (404)", async () => {
    // A receiver of its own: an attempt already claimed when the endpoint is deactivated below may
    // still arrive afterwards, and must not land among the next test's requests.
    const failing = await startReceiver();
    failing.respond(() => ({ status: 500 }));
    const { ep, to } = await routed({ url: failing.url, maxAttempts: 10 });
    await mail(to);
    const retrying = await deliveryOf(ep.id, "retrying");
    const r = await acct.api("POST", `/api/v1/deliveries/${retrying.id}/retry`);
    expect(r.status).toBe(409);
    expect((await acct.api("POST", "/api/v1/deliveries/dlv_unknown/retry")).status).toBe(404);
    const readOnly = await stack.account({ scope: "read" });
    expect((await readOnly.api("POST", `/api/v1/deliveries/${retrying.id}/retry`)).status).toBe(403);
    // Stop it so it does not keep the dispatcher busy.
    await acct.api("PATCH", `/api/v1/endpoints/${ep.id}`, { active: false });
    await failing.close();
  });
});

describe("POST /endpoints/{id}/test", () => {
  it("sends one signed sample email.received and persists nothing", async () => {
    receiver.respond(() => ({ status: 202, body: "y".repeat(9_000) }));
    const { ep } = await routed({ url: `${receiver.url}/test-hook`, headers: { "X-Env": "staging" } });
    const before = await Promise.all([stack.prisma.delivery.count(), stack.prisma.email.count()]);
    const r = await acct.api("POST", `/api/v1/endpoints/${ep.id}/test`);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["durationMs", "error", "ok", "responseBody", "status"]);
    expect(r.body).toMatchObject({ ok: true, status: 202, error: null });
    expect(r.body.responseBody).toBe("y".repeat(4096));
    expect(Number.isInteger(r.body.durationMs)).toBe(true);

    expect(receiver.requests).toHaveLength(1);
    const req = receiver.requests[0]!;
    expect(req.path).toBe("/test-hook");
    expect(req.headers["x-service-event"]).toBe("email.received");
    expect(req.headers["x-env"]).toBe("staging");
    expect(verify(ep.secret, String(req.headers["x-service-signature"]), req.body)).toBe(true);
    const payload = JSON.parse(req.body.toString());
    expect(payload).toMatchObject({ type: "email.received", data: { endpointId: ep.id, domain } });
    expect(payload.id).toBe(req.headers["x-service-delivery-id"]);
    expect(payload.data.email.subject).toBe("Test delivery from mailroom");

    expect(await Promise.all([stack.prisma.delivery.count(), stack.prisma.email.count()])).toEqual(before);
    expect((await acct.api("GET", `/api/v1/deliveries?endpointId=${ep.id}`)).body.data).toEqual([]);
  });

  it("reports failures: HTTP status, timeout, unreachable, redirect (not followed)", async () => {
    const { ep } = await routed({ url: receiver.url, timeoutSeconds: 1 });
    receiver.respond(() => ({ status: 500, body: "nope" }));
    expect((await acct.api("POST", `/api/v1/endpoints/${ep.id}/test`)).body).toMatchObject({
      ok: false,
      status: 500,
      error: "HTTP 500",
      responseBody: "nope",
    });
    receiver.respond(() => ({ status: 200, delayMs: 2_500 }));
    expect((await acct.api("POST", `/api/v1/endpoints/${ep.id}/test`)).body).toMatchObject({
      ok: false,
      status: null,
      error: "timeout",
      responseBody: "",
    });
    receiver.respond(() => ({ status: 302, headers: { location: `${other.url}/x` } }));
    const redirect = await acct.api("POST", `/api/v1/endpoints/${ep.id}/test`);
    expect(redirect.body).toMatchObject({
      ok: false,
      status: 302,
      error: "redirect: HTTP 302 (redirects are not followed)",
    });
    expect(other.requests).toHaveLength(0);

    await stack.prisma.endpoint.update({ where: { id: ep.id }, data: { url: "http://127.0.0.1:1/" } });
    expect((await acct.api("POST", `/api/v1/endpoints/${ep.id}/test`)).body).toMatchObject({
      ok: false,
      status: null,
      error: "unreachable: ECONNREFUSED",
    });
    expect((await acct.api("POST", "/api/v1/endpoints/ep_unknown/test")).status).toBe(404);
    const mailbox = await acct.api("POST", "/api/v1/endpoints", { type: "email", url: "mailto:ops@example.com" });
    expect(mailbox.status).toBe(201);
    const emailTest = await acct.api("POST", `/api/v1/endpoints/${mailbox.body.id}/test`);
    expect(emailTest.status).toBe(400);
    expect(emailTest.body.error).toMatch(/email destination/);
  });

  it("sends Slack endpoints a chat message, unsigned", async () => {
    const { ep } = await routed({ url: `${receiver.url}/slack`, type: "slack" });
    const r = await acct.api("POST", `/api/v1/endpoints/${ep.id}/test`);
    expect(r.body.ok).toBe(true);
    const req = receiver.requests[0]!;
    expect(req.headers["x-service-signature"]).toBeUndefined();
    const msg = JSON.parse(req.body.toString());
    expect(msg.blocks[0]).toMatchObject({ type: "header", text: { text: "Test delivery from mailroom" } });
  });
});

describe("POST /endpoints/{id}/rotate-secret", () => {
  it("shows the new secret once; both secrets sign for 24 h (two v1=)", async () => {
    const { ep, to } = await routed({ url: receiver.url });
    const r = await acct.api("POST", `/api/v1/endpoints/${ep.id}/rotate-secret`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: ep.id, secret: expect.stringMatching(/^whsec_/) });
    expect(r.body.secret).not.toBe(ep.secret);
    const overlap = Date.parse(r.body.previousSecretExpiresAt) - Date.now();
    expect(overlap).toBeGreaterThan(23.9 * 3_600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3_600_000);
    expect((await acct.api("GET", `/api/v1/endpoints/${ep.id}`)).body).not.toHaveProperty("secret");

    await mail(to);
    await deliveryOf(ep.id, "delivered");
    const test = await acct.api("POST", `/api/v1/endpoints/${ep.id}/test`);
    expect(test.body.ok).toBe(true);
    expect(receiver.requests).toHaveLength(2); // the delivery and the test
    for (const req of receiver.requests) {
      const sig = String(req.headers["x-service-signature"]);
      expect(sig.match(/v1=/g)).toHaveLength(2);
      expect(verify(r.body.secret, sig, req.body)).toBe(true);
      expect(verify(ep.secret, sig, req.body)).toBe(true);
    }

    // A second rotation keeps only the two newest secrets.
    const r2 = await acct.api("POST", `/api/v1/endpoints/${ep.id}/rotate-secret`);
    receiver.requests.length = 0;
    await acct.api("POST", `/api/v1/endpoints/${ep.id}/test`);
    const sig = String(receiver.requests[0]!.headers["x-service-signature"]);
    expect(verify(r2.body.secret, sig, receiver.requests[0]!.body)).toBe(true);
    expect(verify(r.body.secret, sig, receiver.requests[0]!.body)).toBe(true);
    expect(verify(ep.secret, sig, receiver.requests[0]!.body)).toBe(false);
  });
});

describe("custom headers", () => {
  it("refuses reserved names and more than 10 headers at create and update (400)", async () => {
    const reserved = [
      "Content-Type",
      "content-length",
      "Host",
      "X-Service-Signature",
      "x-service-event",
      "X-Inbound-Delivery-Id",
    ];
    for (const name of reserved) {
      const r = await acct.api("POST", "/api/v1/endpoints", { url: receiver.url, headers: { [name]: "x" } });
      expect({ name, status: r.status }).toEqual({ name, status: 400 });
      expect(r.body.error).toMatch(/reserved/);
    }
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, "v"]));
    expect((await acct.api("POST", "/api/v1/endpoints", { url: receiver.url, headers: eleven })).status).toBe(400);
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`X-H${i}`, "v"]));
    const ep = await acct.api("POST", "/api/v1/endpoints", { url: receiver.url, headers: ten });
    expect(ep.status).toBe(201);
    const patch = await acct.api("PATCH", `/api/v1/endpoints/${ep.body.id}`, { headers: { "X-Service-Event": "x" } });
    expect(patch.status).toBe(400);
    // All ten go out with the test delivery, and ours are untouched.
    await acct.api("POST", `/api/v1/endpoints/${ep.body.id}/test`);
    const req = receiver.requests[0]!;
    for (let i = 0; i < 10; i++) expect(req.headers[`x-h${i}`]).toBe("v");
    expect(req.headers["x-service-event"]).toBe("email.received");
  });
});

describe("inactive endpoints", () => {
  it("receive nothing while inactive; the delivery waits and goes out when re-activated", async () => {
    const { ep, to } = await routed({ url: receiver.url });
    expect((await acct.api("PATCH", `/api/v1/endpoints/${ep.id}`, { active: false })).status).toBe(200);
    await mail(to);
    const pending = await waitFor(async () => {
      const list = await acct.api("GET", `/api/v1/deliveries?endpointId=${ep.id}`);
      return list.body.data[0];
    });
    expect(pending).toMatchObject({ status: "pending", attemptCount: 0 });
    // Give the dispatcher the job; it must not send.
    await waitFor(async () => !(await stack.deliveryQueue.getJob(`${pending.id}.1`)), { what: "job consumed" });
    expect(receiver.requests).toHaveLength(0);

    await acct.api("PATCH", `/api/v1/endpoints/${ep.id}`, { active: true });
    // The dispatcher's sweeper resumes it (within SWEEP_INTERVAL_MS; 250 ms here).
    await deliveryOf(ep.id, "delivered");
    expect(receiver.requests).toHaveLength(1);
  });
});
