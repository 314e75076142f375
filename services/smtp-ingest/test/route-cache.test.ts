import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { poolOf } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { type IngestEnv, ingestEnv, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type PgProxy, type Seeded, seedAddress, seedDomain, startPgProxy } from "@mailroom/testing";
import { lookupInBatches } from "../src/rcpt-lookup.ts";
import { decideRecipient } from "../src/recipients.ts";
import { RouteCache } from "../src/route-cache.ts";
import { listenForRouteChanges, type RouteListener } from "../src/route-listener.ts";
import { rawSession } from "./raw-session.ts";

/** The last guard of every wait below: the cache keeps answers 10 minutes, so only a notification changes one sooner. */
const GUARD_MS = 90_000;
const TTL_MS = "600000";

/** Waits for a condition (each check a real RCPT or lookup); fails only past the guard. */
async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + GUARD_MS;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)} after ${GUARD_MS} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("RCPT route cache: changes made through the API reach the ingest", () => {
  let stack: Stack;
  let acct: TestAccount;
  let domainId: string;
  const DOMAIN = "routes-api-example.com";

  beforeAll(async () => {
    stack = await startStack({
      services: { ruleEngine: false, dispatcher: false },
      ingestEnv: { SMTP_RCPT_CACHE_TTL_MS: TTL_MS },
    });
    acct = await stack.account({ plan: "scale" });
    const created = await acct.api("POST", "/api/v1/domains", { domain: DOMAIN });
    expect(created.status).toBe(201);
    domainId = created.body.id;
    // Verification is DNS's business (domain-verification tests); here the row says verified.
    await stack.prisma.domain.update({ where: { id: domainId }, data: { status: "verified" } });
    await until("listener", async () => stack.rcptRoutes?.connected, Boolean);
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  const rcpt = async (to: string) => {
    const s = await rawSession(stack.smtpPort);
    try {
      expect(await s.cmd("MAIL FROM:<a@sender.test>\r\n")).toMatch(/^250 /);
      return (await s.cmd(`RCPT TO:<${to}>\r\n`)).slice(0, 9);
    } finally {
      s.close();
    }
  };

  it("an address created, disabled and deleted through the API changes the RCPT answer; answers in between come from the cache", async () => {
    const routes = stack.rcptRoutes as RouteCache;
    // Once the domain's verification is seen, the unknown address is refused, and then refused from the cache.
    await until(
      "domain verified",
      () => rcpt(`new@${DOMAIN}`),
      (r) => r === "550 5.1.1",
    );
    const hits = routes.counts.hit;
    expect(await rcpt(`new@${DOMAIN}`)).toBe("550 5.1.1");
    expect(routes.counts.hit).toBe(hits + 1);

    const address = await acct.api("POST", "/api/v1/addresses", { domainId, localPart: "new" });
    expect(address.status).toBe(201);
    await until(
      "created address accepted",
      () => rcpt(`new@${DOMAIN}`),
      (r) => r.startsWith("250"),
    );
    const cached = routes.counts.hit;
    expect(await rcpt(`new@${DOMAIN}`)).toMatch(/^250/);
    expect(routes.counts.hit).toBe(cached + 1);

    const off = await acct.api("PATCH", `/api/v1/addresses/${address.body.id}`, { active: false });
    expect(off.status).toBe(200);
    await until(
      "disabled address refused",
      () => rcpt(`new@${DOMAIN}`),
      (r) => r === "550 5.2.1",
    );

    expect((await acct.api("DELETE", `/api/v1/addresses/${address.body.id}`)).status).toBe(204);
    await until(
      "deleted address refused",
      () => rcpt(`new@${DOMAIN}`),
      (r) => r === "550 5.1.1",
    );
  }, 300_000);

  it("an account's plan and a deleted domain reach it too", async () => {
    const routes = stack.rcptRoutes as RouteCache;
    expect((await acct.api("POST", "/api/v1/addresses", { domainId, localPart: "plan" })).status).toBe(201);
    // 3,000 received this month: plenty of room on Scale, so the answer is cached…
    const month = new Date().toISOString().slice(0, 7);
    await stack.prisma.usageCounter.create({ data: { accountId: acct.accountId, month, received: 3_000 } });
    await until(
      "address accepted",
      () => rcpt(`plan@${DOMAIN}`),
      (r) => r.startsWith("250"),
    );
    const hits = routes.counts.hit;
    expect(await rcpt(`plan@${DOMAIN}`)).toMatch(/^250/);
    expect(routes.counts.hit).toBe(hits + 1);
    // …and on Free (3,000) it is full: the plan change is heard, and RCPT refuses.
    await stack.admin("accounts", "set-plan", "--account", acct.accountId, "--plan", "free");
    await until(
      "plan heard",
      () => rcpt(`plan@${DOMAIN}`),
      (r) => r === "452 4.2.2",
    );

    expect((await acct.api("DELETE", `/api/v1/domains/${domainId}`)).status).toBe(204);
    await until(
      "deleted domain refused",
      () => rcpt(`plan@${DOMAIN}`),
      (r) => r === "550 5.1.1",
    );
  }, 300_000);
});

describe("RCPT route cache: the listening connection dropped", () => {
  let t: IngestEnv;
  let proxy: PgProxy;
  let listener: RouteListener;
  let cache: RouteCache;
  let d: Seeded;

  beforeAll(async () => {
    t = await ingestEnv();
    d = await seedDomain(t.prisma, "routes-drop.example", { plan: "scale" });
    await seedAddress(t.prisma, d, "info");
    proxy = await startPgProxy(t.env.databaseUrl);
    cache = new RouteCache(lookupInBatches(poolOf(t.prisma)), { ttlMs: Number(TTL_MS) });
    listener = listenForRouteChanges(proxy.url, cache, createLogger("test", "silent"), {
      firstMs: 20,
      maxRetryMs: 200,
    });
    await until("listener", async () => cache.connected, Boolean);
  }, 120_000);
  afterAll(async () => {
    await listener?.close();
    await proxy?.close();
    await t?.close();
  });

  const verdict = async (to: string) => {
    const v = await decideRecipient(cache.lookup, to);
    return v.ok ? 250 : v.code;
  };

  it("reads Postgres while it is down, flushes when it is back, and hears changes again", async () => {
    expect(await verdict("info@routes-drop.example")).toBe(250);
    const hits = cache.counts.hit;
    expect(await verdict("info@routes-drop.example")).toBe(250);
    expect(cache.counts.hit).toBe(hits + 1);

    // The listener's connection goes; a change made now is notified to no one.
    proxy.down();
    await until(
      "listener lost",
      async () => cache.connected,
      (c) => !c,
    );
    await t.prisma.address.deleteMany({ where: { domainId: d.domainId, localPart: "info" } });
    expect(await verdict("info@routes-drop.example")).toBe(550);

    // Back: what was cached before the drop is gone, and the next change is heard again.
    proxy.up();
    await until("listener back", async () => cache.connected, Boolean);
    expect(await verdict("info@routes-drop.example")).toBe(550);
    expect(await verdict("info@routes-drop.example")).toBe(550);
    expect(cache.counts.hit).toBe(hits + 2);
    await seedAddress(t.prisma, d, "info");
    await until(
      "re-created address accepted",
      () => verdict("info@routes-drop.example"),
      (v) => v === 250,
    );
    expect(cache.connected).toBe(true);
  }, 300_000);

  it("a lookup in flight when a change is notified is answered but not kept", async () => {
    let read: () => void = () => undefined;
    let release: () => void = () => undefined;
    const wasRead = new Promise<void>((r) => {
      read = r;
    });
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const inner = lookupInBatches(poolOf(t.prisma));
    const slow = new RouteCache(
      async (key) => {
        const rows = await inner(key);
        read();
        await gate;
        return rows;
      },
      { ttlMs: Number(TTL_MS) },
    );
    slow.listening();
    const asked = decideRecipient(slow.lookup, "sales@routes-drop.example");
    // Postgres answered "no such address"; the address is made and notified before that answer is kept.
    await wasRead;
    await seedAddress(t.prisma, d, "sales");
    slow.invalidate(`d:${d.domainId}`);
    release();
    expect((await asked).ok).toBe(false);
    // Not kept: the next lookup reads Postgres and sees the address.
    expect((await decideRecipient(slow.lookup, "sales@routes-drop.example")).ok).toBe(true);
  }, 60_000);
});
