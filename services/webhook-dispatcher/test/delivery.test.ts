import { createHmac, timingSafeEqual } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { sweepOverdueDeliveries } from "@mailroom/deliveries";
import {
  type Receiver,
  type Seeded,
  seedDelivery,
  seedDomain,
  seedEndpoint,
  startReceiver,
  TEST_ENDPOINT_SECRET,
  waitFor,
} from "@mailroom/testing";
import { closedPort, files, type Harness, logger, queueFirstAttempt, startHarness } from "./fixtures.ts";

/**
 * Spec §3 "Delivery" transitions and §6 rules, each against a real HTTP receiver, through the real
 * sender (SSRF guard on the connect path; private destinations allowed here because the
 * receivers listen on loopback — the guard itself is covered by ssrf.test.ts).
 * Backoff unit 20 ms: retries after 20 ms, 100 ms, 600 ms, 2.4 s.
 */
let h: Harness;
let receiver: Receiver;
let other: Receiver;
let s: Seeded;

beforeAll(async () => {
  [h, receiver, other] = await Promise.all([startHarness(), startReceiver(), startReceiver()]);
  s = await seedDomain(h.prisma, "acme.example");
  h.dispatcher();
});
afterAll(async () => {
  await h?.close();
  await Promise.all([receiver?.close(), other?.close()]);
});
beforeEach(() => {
  receiver.requests.length = 0;
  other.requests.length = 0;
  receiver.respond(() => ({ status: 200, body: "ok" }));
});

const settled = (id: string) =>
  waitFor(
    async () => {
      const d = await h.prisma.delivery.findUnique({
        where: { id },
        include: { attempts: { orderBy: { number: "asc" } } },
      });
      return d && (d.status === "delivered" || d.status === "dead") ? d : null;
    },
    { what: `delivery ${id} delivered or dead`, timeoutMs: 20_000 },
  );

/** Stripe-style check written from scratch: HMAC-SHA256(secret, "<t>.<raw body>") in hex. */
function verify(secret: string, header: string, body: Buffer): boolean {
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  if (!t) return false;
  const expected = createHmac("sha256", secret).update(`${t}.`).update(body).digest();
  return [...header.matchAll(/v1=([0-9a-f]{64})/g)].some((m) =>
    timingSafeEqual(expected, Buffer.from(m[1] as string, "hex")),
  );
}

describe("attempt outcomes (spec §3 Delivery)", () => {
  it("2xx → delivered after one attempt, signed, with the delivery headers and custom headers", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, `${receiver.url}/hook`, { headers: { "X-Token": "t1" } });
    const d = await seedDelivery(h.prisma, s, ep, { subject: "Hello", attachments: files(1) });
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "delivered", attemptCount: 1, lastStatusCode: 200, lastError: null });
    expect(done.deliveredAt).not.toBeNull();
    expect(done.nextAttemptAt).toBeNull();
    expect(done.attempts).toHaveLength(1);
    expect(done.attempts[0]).toMatchObject({ number: 1, statusCode: 200, error: null, responseBody: "ok" });

    expect(receiver.requests).toHaveLength(1);
    const req = receiver.requests[0]!;
    expect(req.path).toBe("/hook");
    expect(req.headers["x-service-event"]).toBe("email.received");
    expect(req.headers["x-inbound-event"]).toBe("email.received");
    expect(req.headers["x-service-delivery-id"]).toBe(d.id);
    expect(req.headers["x-inbound-delivery-id"]).toBe(d.id);
    expect(req.headers["x-token"]).toBe("t1");
    expect(req.headers["content-type"]).toBe("application/json");
    const sig = String(req.headers["x-service-signature"]);
    expect(req.headers["x-inbound-signature"]).toBe(sig);
    expect(sig).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verify(TEST_ENDPOINT_SECRET, sig, req.body)).toBe(true);
    expect(verify("whsec_wrong", sig, req.body)).toBe(false);
    const payload = JSON.parse(req.body.toString());
    expect(payload).toMatchObject({ id: d.id, type: "email.received", data: { endpointId: ep } });
    expect(payload.data.email).toMatchObject({
      id: d.emailId,
      subject: "Hello",
      attachments: [{ filename: "file-0.txt" }],
    });
  });

  it("500 then 2xx → retrying, then delivered; one delivery id on both attempts", async () => {
    receiver.respond((_req, i) => (i === 0 ? { status: 500, body: "boom" } : { status: 204 }));
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url);
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "delivered", attemptCount: 2, lastStatusCode: 204, lastError: null });
    expect(done.attempts.map((a) => [a.number, a.statusCode, a.error, a.responseBody])).toEqual([
      [1, 500, "HTTP 500", "boom"],
      [2, 204, null, ""],
    ]);
    // The retry came after the first backoff step (1 unit = 20 ms).
    const [a1, a2] = done.attempts;
    expect(a2!.startedAt.getTime() - a1!.finishedAt.getTime()).toBeGreaterThanOrEqual(20 - 5);
    expect(receiver.requests.map((r) => r.headers["x-service-delivery-id"])).toEqual([d.id, d.id]);
    // Each attempt is signed afresh over its own body; both verify.
    for (const r of receiver.requests)
      expect(verify(TEST_ENDPOINT_SECRET, String(r.headers["x-service-signature"]), r.body)).toBe(true);
  });

  it("a response body with a NUL byte is recorded (NUL as U+FFFD), so the delivery is not POSTed again", async () => {
    receiver.respond(() => ({ status: 200, body: "ok\u0000done" }));
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url);
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "delivered", attemptCount: 1 });
    expect(done.attempts.map((a) => a.responseBody)).toEqual(["ok\uFFFDdone"]);
    expect(receiver.requests).toHaveLength(1);
  });

  it("timeout → failed attempt with error 'timeout'; maxAttempts 1 → dead", async () => {
    receiver.respond(() => ({ status: 200, delayMs: 2_500 }));
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url, { timeoutSeconds: 1, maxAttempts: 1 });
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "dead", attemptCount: 1, lastStatusCode: null, lastError: "timeout" });
    expect(done.attempts[0]).toMatchObject({ statusCode: null, error: "timeout" });
    expect(done.attempts[0]!.durationMs).toBeGreaterThanOrEqual(900);
  });

  it("connection refused → failed attempt 'unreachable: ECONNREFUSED', retried, then dead", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, `http://127.0.0.1:${await closedPort()}/`, { maxAttempts: 2 });
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "dead", attemptCount: 2, lastError: "unreachable: ECONNREFUSED" });
    expect(done.attempts.map((a) => a.error)).toEqual(["unreachable: ECONNREFUSED", "unreachable: ECONNREFUSED"]);
  });

  it("301 is a failed attempt and is never followed", async () => {
    receiver.respond(() => ({ status: 301, headers: { location: `${other.url}/elsewhere` }, body: "moved" }));
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url, { maxAttempts: 2 });
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "dead", attemptCount: 2, lastStatusCode: 301 });
    expect(done.lastError).toBe("redirect: HTTP 301 (redirects are not followed)");
    expect(receiver.requests).toHaveLength(2);
    expect(other.requests).toHaveLength(0);
  });

  it("every failure until maxAttempts → dead, retries spaced by the backoff schedule", async () => {
    receiver.respond(() => ({ status: 503, body: "busy" }));
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url, { maxAttempts: 4 });
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "dead", attemptCount: 4, maxAttempts: 4, nextAttemptAt: null });
    expect(done.lastError).toBe("HTTP 503");
    expect(done.attempts.map((a) => a.number)).toEqual([1, 2, 3, 4]);
    expect(receiver.requests).toHaveLength(4);
    // 1, 5, 30 units of 20 ms between attempts (lower bounds: the schedule, not the machine's speed).
    const gaps = done.attempts.slice(1).map((a, i) => a.startedAt.getTime() - done.attempts[i]!.finishedAt.getTime());
    expect(gaps.map((g, i) => g >= [20, 100, 600][i]! - 5)).toEqual([true, true, true]);
    // Dead is final: a stray job for the next attempt does nothing.
    await h.queue.add("delivery", { deliveryId: d.id }, { jobId: `${d.id}.5` });
    await waitFor(async () => !(await h.queue.getJob(`${d.id}.5`)), { what: "stray job consumed" });
    expect(receiver.requests).toHaveLength(4);
  });

  it("410 Gone is retried like any non-2xx until maxAttempts, each attempt noted 'gone'", async () => {
    receiver.respond(() => ({ status: 410, body: "gone" }));
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url, { maxAttempts: 3 });
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "dead", attemptCount: 3, lastStatusCode: 410, lastError: "HTTP 410 (gone)" });
    expect(done.attempts.map((a) => [a.statusCode, a.error])).toEqual([
      [410, "HTTP 410 (gone)"],
      [410, "HTTP 410 (gone)"],
      [410, "HTTP 410 (gone)"],
    ]);
    expect(receiver.requests).toHaveLength(3);
  });

  it("a 410 followed by 2xx is delivered (the receiver came back)", async () => {
    let n = 0;
    receiver.respond(() => (++n === 1 ? { status: 410, body: "gone" } : { status: 200, body: "ok" }));
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url, { maxAttempts: 5 });
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    const done = await settled(d.id);
    expect(done).toMatchObject({ status: "delivered", attemptCount: 2 });
    expect(done.attempts.map((a) => a.statusCode)).toEqual([410, 200]);
  });

  it("a job for an attempt already made (sweeper or duplicate) sends nothing", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url);
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    await settled(d.id);
    await h.prisma.delivery.update({ where: { id: d.id }, data: { status: "retrying" } }); // pretend it is open
    await h.queue.add("delivery", { deliveryId: d.id }, { jobId: `${d.id}.1` }); // stale: attempt 1 is made
    await waitFor(async () => !(await h.queue.getJob(`${d.id}.1`)), { what: "stale job consumed" });
    expect(receiver.requests).toHaveLength(1);
    expect(await h.prisma.deliveryAttempt.count({ where: { deliveryId: d.id } })).toBe(1);
    await h.prisma.delivery.update({ where: { id: d.id }, data: { status: "delivered" } });
  });
});

describe("secret rotation", () => {
  it("signs with both secrets while the previous one is valid, and with one after it expires", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url, {
      secret: "whsec_new",
      previousSecret: "whsec_old",
      previousSecretExpiresAt: new Date(Date.now() + 3_600_000),
    });
    const d1 = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d1.id);
    await settled(d1.id);
    const r1 = receiver.requests[0]!;
    const sig1 = String(r1.headers["x-service-signature"]);
    expect(sig1).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verify("whsec_new", sig1, r1.body)).toBe(true);
    expect(verify("whsec_old", sig1, r1.body)).toBe(true);

    await h.prisma.endpoint.update({
      where: { id: ep },
      data: { previousSecretExpiresAt: new Date(Date.now() - 1) },
    });
    const d2 = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d2.id);
    await settled(d2.id);
    const r2 = receiver.requests[1]!;
    const sig2 = String(r2.headers["x-service-signature"]);
    expect(sig2).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verify("whsec_new", sig2, r2.body)).toBe(true);
    expect(verify("whsec_old", sig2, r2.body)).toBe(false);
  });
});

describe("inactive endpoints", () => {
  it("receive nothing; their deliveries wait and go out once the endpoint is active again", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, receiver.url, { active: false });
    const d = await seedDelivery(h.prisma, s, ep);
    await queueFirstAttempt(h.queue, d.id);
    await waitFor(async () => !(await h.queue.getJob(`${d.id}.1`)), { what: "job consumed" });
    expect(await h.prisma.delivery.findUnique({ where: { id: d.id } })).toMatchObject({
      status: "pending",
      attemptCount: 0,
    });
    // The sweeper leaves it alone while the endpoint is inactive…
    expect(await dispatcherSweep(0)).toBe(0);
    expect(receiver.requests).toHaveLength(0);

    // …and queues it once the endpoint is active again.
    await h.prisma.endpoint.update({ where: { id: ep }, data: { active: true } });
    expect(await dispatcherSweep(0)).toBe(1);
    expect(await settled(d.id)).toMatchObject({ status: "delivered", attemptCount: 1 });
    expect(receiver.requests).toHaveLength(1);
  });
});

const dispatcherSweep = (graceMs: number) =>
  sweepOverdueDeliveries(h.prisma, { delivery: h.queue }, logger, { graceMs });
