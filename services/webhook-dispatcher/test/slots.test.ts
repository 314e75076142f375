import { createRedis, type Redis } from "@mailroom/queues";
import { createTestEnv, type TestEnv } from "@mailroom/testing";
import { createEndpointSlots, createLocalSlots } from "../src/slots.ts";

let env: TestEnv;
let redis: Redis;
beforeAll(async () => {
  env = await createTestEnv();
  redis = createRedis(env.redisUrl, "worker");
});
afterAll(async () => {
  redis.disconnect();
  await env.cleanup();
});

const LEASE = 60_000;

describe("endpoint slots: local waiters in front of the Redis semaphore", () => {
  it("a released slot goes to the first waiter here without going back to Redis; the limit holds across processes", async () => {
    const key = `${env.redisPrefix}:endpoint-slots:ep_handoff`;
    const inner = createEndpointSlots(redis, { prefix: env.redisPrefix, limit: 2 });
    const a = createLocalSlots(inner, { limit: 2, maxWaiters: 2, maxWaitMs: 30_000 });
    const b = createLocalSlots(inner, { limit: 2, maxWaiters: 2, maxWaitMs: 30_000 }); // another process

    expect(await a.acquire("ep_handoff", "h1", LEASE)).toBe(true);
    expect(await a.acquire("ep_handoff", "h2", LEASE)).toBe(true);
    expect(a.saturated("ep_handoff")).toBe(false);
    const third = a.acquire("ep_handoff", "h3", LEASE); // waits here
    const fourth = a.acquire("ep_handoff", "h4", LEASE);
    // Two waiting and both slots held: a fifth job would neither get one nor wait.
    expect(a.saturated("ep_handoff")).toBe(true);
    expect(await a.acquire("ep_handoff", "h5", LEASE)).toBe(false);
    // The other process holds none of them, so it does not wait: busy at once.
    expect(await b.acquire("ep_handoff", "x1", LEASE)).toBe(false);

    await a.release("ep_handoff", "h1");
    expect(await third).toBe(true);
    // Handed over: Redis still has exactly the two original leases.
    expect((await redis.zrange(key, 0, -1)).sort()).toEqual(["h1", "h2"]);
    expect(await b.acquire("ep_handoff", "x1", LEASE)).toBe(false);

    await a.release("ep_handoff", "h2");
    expect(await fourth).toBe(true);
    // h3 and h4 release with nobody waiting: the leases they carry leave Redis.
    await a.release("ep_handoff", "h3");
    await a.release("ep_handoff", "h4");
    expect(await redis.zcard(key)).toBe(0);
    expect(await b.acquire("ep_handoff", "x1", LEASE)).toBe(true);
    await b.release("ep_handoff", "x1");
  });

  it("a waiter whose wait runs out is told busy; a lease nearly run out is renewed when handed over", async () => {
    const key = `${env.redisPrefix}:endpoint-slots:ep_renew`;
    const inner = createEndpointSlots(redis, { prefix: env.redisPrefix, limit: 1 });
    const local = createLocalSlots(inner, { limit: 1, maxWaiters: 1, maxWaitMs: 50 });
    // A short first lease: less than half of the next holder's is left when it changes hands.
    expect(await local.acquire("ep_renew", "h1", 1_000)).toBe(true);
    expect(await local.acquire("ep_renew", "late", LEASE)).toBe(false); // waited 50 ms, nothing released
    const waiting = local.acquire("ep_renew", "h2", LEASE);
    const before = Number(await redis.zscore(key, "h1"));
    await local.release("ep_renew", "h1");
    expect(await waiting).toBe(true);
    // The renewal is not awaited by acquire: wait for the score to move (Redis's clock, ~now + 60 s).
    for (let i = 0; Number(await redis.zscore(key, "h1")) - before < 30_000; i++) {
      if (i > 1_000) throw new Error("lease not renewed");
      await redis.ping();
    }
    await local.release("ep_renew", "h2");
    expect(await redis.zcard(key)).toBe(0);
  });

  it("a lease granted while the endpoint's entry here was dropped and made anew is still handed over", async () => {
    const key = `${env.redisPrefix}:endpoint-slots:ep_forgot`;
    const inner = createEndpointSlots(redis, { prefix: env.redisPrefix, limit: 2 });
    const local = createLocalSlots(inner, { limit: 2, maxWaiters: 2, maxWaitMs: 30_000 });
    expect(await local.acquire("ep_forgot", "h1", LEASE)).toBe(true);
    const second = local.acquire("ep_forgot", "h2", LEASE); // its answer from Redis is on the way…
    await local.release("ep_forgot", "h1"); // …when the last holder here leaves (the entry is dropped)
    expect(await second).toBe(true);
    expect(await local.acquire("ep_forgot", "h3", LEASE)).toBe(true);
    // Both slots are this process's: the next job waits here and gets h2's slot when it is released.
    const fourth = local.acquire("ep_forgot", "h4", LEASE);
    await local.release("ep_forgot", "h2");
    expect(await fourth).toBe(true);
    await local.release("ep_forgot", "h3");
    await local.release("ep_forgot", "h4");
    expect(await redis.zcard(key)).toBe(0);
  });
});
