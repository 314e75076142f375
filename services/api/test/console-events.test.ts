import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createEventPublisher, createRedis, type EventPublisher, type RedisClient } from "@mailroom/queues";
import type { ConsoleClient, Stack, TestAccount } from "@mailroom/stack";
import { consoleClient, createMember, startStack } from "@mailroom/stack";
import { openSseWith, type SseReader, waitFor } from "@mailroom/testing";

/**
 * Live events for the console (issue 17, Mail and Deliveries update by themselves): a signed-in
 * member subscribes to GET /console/api/events with the session cookie and receives the events of
 * their own account, never another's; the cookie does not open /api/v1/events and an API key does
 * not open the console's stream; signing out ends an open stream within one heartbeat.
 */
const PASSWORD = "a long enough password";
let stack: Stack;
let a: TestAccount;
let b: TestAccount;
let redis: RedisClient;
let publish: EventPublisher;
const readers: SseReader[] = [];

async function signedIn(email: string): Promise<ConsoleClient> {
  const c = consoleClient(stack);
  expect((await c.signIn(email, PASSWORD)).status).toBe(201);
  return c;
}

async function stream(c: ConsoleClient): Promise<SseReader> {
  const r = await openSseWith(`${stack.apiUrl}/console/api/events`, c.cookie ? { cookie: c.cookie } : {});
  readers.push(r);
  return r;
}

const emailIdsOf = (r: SseReader) => r.events.map((e) => (JSON.parse(e.data) as { emailId: string }).emailId);
const received = (r: SseReader, emailId: string) =>
  waitFor(async () => emailIdsOf(r).includes(emailId), { what: `${emailId} on the stream`, timeoutMs: 30_000 });
// The stream sends its first comment once it is subscribed; an event published after it arrives.
const subscribed = (r: SseReader) =>
  waitFor(async () => r.comments.includes("connected"), { what: "the stream to start", timeoutMs: 30_000 });

beforeAll(async () => {
  stack = await startStack({
    services: { ingest: false, ruleEngine: false, dispatcher: false },
    eventsHeartbeatMs: 300,
  });
  [a, b] = [await stack.account(), await stack.account()];
  await createMember(stack, a.accountId, "live-a@a.example", PASSWORD);
  await createMember(stack, b.accountId, "live-b@b.example", PASSWORD);
  // The rule engine's publisher, on the stack's Redis prefix: the events the API streams.
  redis = createRedis(stack.env.redisUrl, "producer");
  publish = createEventPublisher(redis, stack.env.redisPrefix, (err) => {
    throw err;
  });
});
afterAll(async () => {
  for (const r of readers) r.close();
  await redis?.quit();
  await stack?.close();
});

describe("GET /console/api/events", () => {
  it("streams the member's own account's events and none of another account's", async () => {
    const [ca, cb] = [await signedIn("live-a@a.example"), await signedIn("live-b@b.example")];
    const [ra, rb] = [await stream(ca), await stream(cb)];
    expect(ra.status).toBe(200);
    expect(ra.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await Promise.all([subscribed(ra), subscribed(rb)]);

    await publish({ type: "email.received", accountId: b.accountId, emailId: "em_of_b" });
    await publish({ type: "email.received", accountId: a.accountId, emailId: "em_of_a" });
    await Promise.all([received(ra, "em_of_a"), received(rb, "em_of_b")]);
    // B's event reached B's stream, so it was published and streamed; it never reached A's.
    expect(emailIdsOf(ra)).toEqual(["em_of_a"]);
    expect(emailIdsOf(rb)).toEqual(["em_of_b"]);
    expect(ra.events[0]?.event).toBe("email.received");
  });

  it("needs a session: none, an API key, or the cookie on /api/v1 are refused", async () => {
    const none = await stream(consoleClient(stack));
    expect(none.status).toBe(401);
    const key = await openSseWith(`${stack.apiUrl}/console/api/events`, { authorization: `Bearer ${a.key}` });
    readers.push(key);
    expect(key.status).toBe(401);
    const c = await signedIn("live-a@a.example");
    const cookieOnRest = await openSseWith(`${stack.apiUrl}/api/v1/events`, { cookie: c.cookie ?? "" });
    readers.push(cookieOnRest);
    expect(cookieOnRest.status).toBe(401);
  });

  it("signing out ends an open stream (the session is checked again on each heartbeat)", async () => {
    const c = await signedIn("live-a@a.example");
    const r = await stream(c);
    await subscribed(r);
    // Still open across heartbeats while the session holds.
    await waitFor(async () => r.comments.filter((x) => x === "heartbeat").length >= 2, { what: "two heartbeats" });
    expect((await c.call("DELETE", "/console/api/session")).status).toBe(204);
    await r.ended;
    // And the same cookie no longer opens one.
    expect((await stream(c)).status).toBe(401);
  });

  it("an API key's stream (created in the console) still ends when the console revokes the key", async () => {
    const c = await signedIn("live-a@a.example");
    const k = await c.call("POST", "/console/api/api-keys", { name: "short-lived", scope: "read" });
    expect(k.status).toBe(201);
    const r = await openSseWith(`${stack.apiUrl}/api/v1/events`, { authorization: `Bearer ${k.body.key}` });
    readers.push(r);
    expect(r.status).toBe(200);
    await subscribed(r);
    expect((await c.call("DELETE", `/console/api/api-keys/${k.body.id}`)).status).toBe(200);
    await r.ended;
  });
});
