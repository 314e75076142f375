import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { signInEmailHash, signInFailureKey } from "@mailroom/core";
import type { ConsoleClient, Fixture, Stack, TestAccount } from "@mailroom/stack";
import { concrete, consoleClient, createMember, seedEverything, startStack } from "@mailroom/stack";
import { type RegisteredRoute, registeredRoutes } from "../src/lib/route.ts";

/**
 * Console members and sessions (issue 17) over real HTTP against real Postgres: set-password link,
 * sign-in and out, lockout, CSRF, cookie vs API key separation, and that a member of account A
 * reaches nothing of account B through any console route.
 */
const PASSWORD = "correct horse battery";
let stack: Stack;
let a: TestAccount;
let b: TestAccount;
let fa: Fixture;
let fb: Fixture;

beforeAll(async () => {
  stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
  a = await stack.account({ plan: "free" });
  b = await stack.account({ plan: "scale" });
  fa = await seedEverything(stack, a, "console-a.example.com");
  fb = await seedEverything(stack, b, "console-b.example.com");
  await createMember(stack, a.accountId, "Alice@A.example", PASSWORD);
  await createMember(stack, b.accountId, "bob@b.example", PASSWORD);
});
afterAll(async () => {
  await stack?.close();
});

describe("members create and the one-time link", () => {
  it("prints a link under /console/set-password with the token in the fragment, valid 24 h", async () => {
    const acc = await stack.account();
    const m = await stack.admin("members", "create", "--account", acc.accountId, "--email", "new@x.example");
    const url = new URL(String(m.setPasswordUrl));
    expect(url.pathname).toBe("/console/set-password");
    expect(url.hash).toMatch(/^#token=[A-Za-z0-9_-]{43}$/);
    const hours = (Date.parse(String(m.expiresAt)) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    // Only the hash is stored.
    const rows = await stack.prisma.memberToken.findMany({ where: { memberId: String(m.id) } });
    expect(rows).toHaveLength(1);
    expect(rows[0]?.hash).not.toContain(url.hash.slice(7));
    const list = await stack.admin("members", "list", "--account", acc.accountId);
    expect(list.data).toEqual([expect.objectContaining({ email: "new@x.example", passwordSet: false })]);
  });

  it("refuses a duplicate email and an unknown account", async () => {
    await expect(
      stack.admin("members", "create", "--account", b.accountId, "--email", "alice@a.example"),
    ).rejects.toThrow(/already a member/);
    await expect(stack.admin("members", "create", "--account", "acc_nope", "--email", "z@x.example")).rejects.toThrow(
      /not found/,
    );
  });

  it("a link works once; a used or expired link answers 410; a short password 400", async () => {
    const acc = await stack.account();
    const m = await stack.admin("members", "create", "--account", acc.accountId, "--email", "once@x.example");
    const token = new URL(String(m.setPasswordUrl)).hash.replace("#token=", "");
    const c = consoleClient(stack);
    const short = await c.call("POST", "/console/api/password", { token, password: "short" });
    expect(short.status).toBe(400);
    expect(short.body.error).toMatch(/^password: must be at least 10 characters/);
    expect((await c.call("POST", "/console/api/password", { token, password: PASSWORD })).status).toBe(200);
    expect((await c.call("POST", "/console/api/password", { token, password: PASSWORD })).status).toBe(410);

    const again = await stack.admin("members", "reset-password", "--email", "once@x.example");
    const t2 = new URL(String(again.setPasswordUrl)).hash.replace("#token=", "");
    await stack.prisma.memberToken.updateMany({
      where: { memberId: String(m.id), usedAt: null },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect((await c.call("POST", "/console/api/password", { token: t2, password: PASSWORD })).status).toBe(410);
  });
});

describe("sign in and out", () => {
  it("sets an HttpOnly SameSite=Lax cookie on /console (not Secure over plain HTTP), then logout ends it", async () => {
    const c = consoleClient(stack);
    const r = await c.signIn("ALICE@a.example", PASSWORD);
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ email: "alice@a.example", accountId: a.accountId, csrfToken: expect.any(String) });
    const cookie = r.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^mailroom_console=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).toContain("Path=/console");
    expect(cookie).not.toContain("Secure");
    // A forged X-Forwarded-Proto is not trusted by default (API_TRUST_PROXY=false).
    const forged = await consoleClient(stack).call(
      "POST",
      "/console/api/session",
      { email: "alice@a.example", password: PASSWORD },
      { "x-forwarded-proto": "https" },
    );
    expect(forged.headers.get("set-cookie")).not.toContain("Secure");

    const me = await c.call("GET", "/console/api/session");
    expect(me).toMatchObject({ status: 200, body: { email: "alice@a.example", csrfToken: c.csrf } });
    const out = await c.call("DELETE", "/console/api/session");
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(/^mailroom_console=; .*Max-Age=0/);
    expect((await c.call("GET", "/console/api/session")).status).toBe(401);
    expect((await c.call("GET", "/console/api/overview")).status).toBe(401);
  });

  it("members remove ends the member's sessions at once", async () => {
    const acc = await stack.account();
    await createMember(stack, acc.accountId, "leaver@x.example", PASSWORD);
    const c = consoleClient(stack);
    expect((await c.signIn("leaver@x.example", PASSWORD)).status).toBe(201);
    expect((await c.call("GET", "/console/api/overview")).status).toBe(200);
    await stack.admin("members", "remove", "--email", "leaver@x.example");
    expect((await c.call("GET", "/console/api/overview")).status).toBe(401);
    expect((await c.signIn("leaver@x.example", PASSWORD)).status).toBe(401);
    await expect(stack.admin("members", "remove", "--email", "leaver@x.example")).rejects.toThrow(/not a member/);
  });

  it("overview: plan, rule cap, allotment used, mail today, failing deliveries", async () => {
    const c = consoleClient(stack);
    await c.signIn("alice@a.example", PASSWORD);
    const r = await c.call("GET", "/console/api/overview");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      account: { id: a.accountId, plan: "free", limits: { shieldRules: 3 }, usage: { shieldRules: 1 } },
      mailToday: 1,
      deliveries: { dead: 1, retrying: 0 },
      counts: { domains: 1, endpoints: 1, addresses: 1 },
    });
  });

  it("wrong password: 401, the same answer as an unknown email; the fifth failure locks (429 + Retry-After)", async () => {
    const acc = await stack.account();
    await createMember(stack, acc.accountId, "lock@x.example", PASSWORD);
    const c = consoleClient(stack);
    const unknown = await c.signIn("nobody@x.example", "whatever-it-is");
    for (let i = 1; i <= 4; i++) {
      const r = await c.signIn("lock@x.example", "wrong password!");
      expect(r.status).toBe(401);
      expect(r.body).toEqual(unknown.body);
    }
    const fifth = await c.signIn("lock@x.example", "wrong password!");
    expect(fifth.status).toBe(429);
    expect(Number(fifth.headers.get("retry-after"))).toBeGreaterThanOrEqual(59);
    // Locked: even the right password is refused until the lock ends.
    const right = await c.signIn("lock@x.example", PASSWORD);
    expect(right.status).toBe(429);
    // The lock ends (moved into the past instead of waiting a minute); the right password works
    // and forgets the failures.
    const lock = { emailHash: signInEmailHash("lock@x.example") };
    await stack.prisma.signInFailure.updateMany({ where: lock, data: { lockedUntil: new Date(Date.now() - 1000) } });
    expect((await c.signIn("lock@x.example", PASSWORD)).status).toBe(201);
    expect(await stack.prisma.signInFailure.count({ where: lock })).toBe(0);
  });

  it("a sixth failure after a lock doubles it", async () => {
    const acc = await stack.account();
    await createMember(stack, acc.accountId, "double@x.example", PASSWORD);
    await stack.prisma.signInFailure.create({
      data: {
        key: signInFailureKey("double@x.example", "127.0.0.1"),
        emailHash: signInEmailHash("double@x.example"),
        failures: 5,
        lastFailureAt: new Date(),
      },
    });
    const r = await consoleClient(stack).signIn("double@x.example", "wrong password!");
    expect(r.status).toBe(429);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(119);
  });

  it("sign-in must be JSON from this origin (login CSRF)", async () => {
    const c = consoleClient(stack);
    const form = await c.call("POST", "/console/api/session", "email=alice%40a.example&password=x", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(form.status).toBe(415);
    const cross = await c.call(
      "POST",
      "/console/api/session",
      { email: "alice@a.example", password: PASSWORD },
      { origin: "https://evil.example" },
    );
    expect(cross.status).toBe(403);
    expect(cross.headers.get("set-cookie")).toBeNull();
  });
});

describe("CSRF", () => {
  let c: ConsoleClient;
  beforeAll(async () => {
    c = consoleClient(stack);
    await c.signIn("alice@a.example", PASSWORD);
  });

  it("every write without the token, or with another session's, is refused 403 and nothing happens", async () => {
    const other = consoleClient(stack);
    await other.signIn("alice@a.example", PASSWORD);
    expect(other.csrf).not.toBe(c.csrf);
    for (const token of [undefined, "", "x".repeat(43), other.csrf as string]) {
      const headers: Record<string, string> = token === undefined ? {} : { "x-csrf-token": token };
      const saved = c.csrf;
      c.csrf = undefined;
      const r = await c.call("POST", `/console/api/deliveries/${fa.deliveryId}/retry`, undefined, headers);
      const k = await c.call("POST", "/console/api/api-keys", { scope: "full" }, headers);
      const out = await c.call("DELETE", "/console/api/session", undefined, headers);
      c.csrf = saved;
      expect([r.status, k.status, out.status]).toEqual([403, 403, 403]);
    }
    const d = await stack.prisma.delivery.findUniqueOrThrow({ where: { id: fa.deliveryId } });
    expect(d.status).toBe("dead");
    expect(await stack.prisma.apiKey.count({ where: { accountId: a.accountId } })).toBe(1);
    expect((await c.call("GET", "/console/api/session")).status).toBe(200);
  });

  it("every write route of the console (reply, edits, retries, rules…) refuses a missing token before it runs", async () => {
    const anonymous = ["POST /console/api/session", "POST /console/api/password"];
    const writes = registeredRoutes(stack.app).filter(
      (r) =>
        r.path.startsWith("/console/api/") &&
        !["GET", "HEAD"].includes(r.method) &&
        !anonymous.includes(`${r.method} ${r.path}`),
    );
    expect(writes.length).toBeGreaterThanOrEqual(20);
    expect(writes.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining([
        "POST /console/api/emails/:id/reply",
        "PATCH /console/api/endpoints/:id",
        "PATCH /console/api/shield-rules/:id",
      ]),
    );
    const before = await stack.prisma.email.count({ where: { accountId: a.accountId } });
    const saved = c.csrf;
    c.csrf = undefined;
    try {
      for (const route of writes) {
        const path = concrete(route.path.replace("/console/api/", "/api/v1/"), fa).replace("/api/v1/", "/console/api/");
        const r = await c.call(route.method, path, { text: "hello", name: "x" });
        expect([route.method, path, r.status]).toEqual([route.method, path, 403]);
      }
    } finally {
      c.csrf = saved;
    }
    expect(await stack.prisma.email.count({ where: { accountId: a.accountId } })).toBe(before);
  });

  it("with the token the same write goes through (retry one dead delivery)", async () => {
    const r = await c.call("POST", `/console/api/deliveries/${fa.deliveryId}/retry`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: fa.deliveryId, status: "pending" });
  });
});

describe("API keys and console sessions never stand in for each other", () => {
  it("an API key does not open the console; a session cookie is not an API key", async () => {
    const c = consoleClient(stack);
    await c.signIn("alice@a.example", PASSWORD);
    const withKey = await fetch(`${stack.apiUrl}/console/api/overview`, {
      headers: { authorization: `Bearer ${a.key}` },
    });
    expect(withKey.status).toBe(401);
    const keyWrite = await fetch(`${stack.apiUrl}/console/api/api-keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(keyWrite.status).toBe(401);
    for (const path of ["/api/v1/account", "/api/v1/domains", "/mcp"]) {
      const r = await fetch(`${stack.apiUrl}${path}`, { headers: { cookie: c.cookie as string } });
      expect([path, r.status]).toEqual([path, 401]);
    }
    // The session token is not a key either.
    const token = (c.cookie as string).split("=")[1];
    const asBearer = await fetch(`${stack.apiUrl}/api/v1/account`, { headers: { authorization: `Bearer ${token}` } });
    expect(asBearer.status).toBe(401);
  });

  it("keys: created read-only by default and shown once, revoked keys are refused on the next request", async () => {
    const c = consoleClient(stack);
    await c.signIn("alice@a.example", PASSWORD);
    const created = await c.call("POST", "/console/api/api-keys", { name: "ci" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "ci", scope: "read", key: expect.stringMatching(/^svc_/) });
    const key = created.body.key as string;
    expect(key.startsWith(created.body.prefix)).toBe(true);
    const list = await c.call("GET", "/console/api/api-keys");
    expect(JSON.stringify(list.body)).not.toContain(key);
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(created.body.id);
    const use = await fetch(`${stack.apiUrl}/api/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    expect(use.status).toBe(200);
    const used = (await c.call("GET", "/console/api/api-keys")).body.data.find(
      (k: { id: string }) => k.id === created.body.id,
    );
    expect(used.lastUsedAt).toEqual(expect.any(String));
    const write = await fetch(`${stack.apiUrl}/api/v1/domains`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ domain: "ro.example.com" }),
    });
    expect(write.status).toBe(403);
    const revoked = await c.call("DELETE", `/console/api/api-keys/${created.body.id}`);
    expect(revoked).toMatchObject({ status: 200, body: { revokedAt: expect.any(String) } });
    const after = await fetch(`${stack.apiUrl}/api/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    expect(after.status).toBe(401);
  });
});

describe("a member of A reaches nothing of B", () => {
  let c: ConsoleClient;
  let routes: RegisteredRoute[];
  beforeAll(async () => {
    c = consoleClient(stack);
    await c.signIn("alice@a.example", PASSWORD);
    routes = registeredRoutes(stack.app).filter((r) => r.path.startsWith("/console/api/"));
  });

  const bRows = () =>
    Promise.all([
      stack.prisma.domain.findMany({ where: { accountId: b.accountId }, orderBy: { id: "asc" } }),
      stack.prisma.address.findMany({ where: { accountId: b.accountId }, orderBy: { id: "asc" } }),
      stack.prisma.endpoint.findMany({ where: { accountId: b.accountId }, orderBy: { id: "asc" } }),
      stack.prisma.email.findMany({ where: { accountId: b.accountId }, orderBy: { id: "asc" } }),
      stack.prisma.shieldRule.findMany({ where: { accountId: b.accountId }, orderBy: { id: "asc" } }),
      stack.prisma.delivery.findMany({ where: { accountId: b.accountId }, orderBy: { id: "asc" } }),
      stack.prisma.blockRecord.findMany({ where: { accountId: b.accountId }, orderBy: { id: "asc" } }),
      stack.prisma.apiKey.findMany({ where: { accountId: b.accountId }, orderBy: { id: "asc" } }),
    ]).then((x) => JSON.stringify(x));

  it("the console serves the REST resources (same routers), and every :id route with B's ids is 404", async () => {
    const withId = routes.filter((r) => r.path.includes(":id"));
    expect(withId.length).toBeGreaterThanOrEqual(20);
    const bKey = (await stack.prisma.apiKey.findFirstOrThrow({ where: { accountId: b.accountId } })).id;
    const before = await bRows();
    for (const route of withId) {
      const path = concrete(route.path.replace("/console/api/", "/api/v1/"), fb)
        .replace("/api/v1/", "/console/api/")
        .replace("/api-keys/x_unknown", `/api-keys/${bKey}`);
      const r = await c.call(route.method, path, route.method === "GET" || route.method === "DELETE" ? undefined : {});
      // 404 (not found for this account), or 400 when the (empty) body is refused before any lookup.
      expect([route.method, path, [400, 404].includes(r.status)]).toEqual([route.method, path, true]);
      if (route.method === "GET") expect([path, r.status]).toEqual([path, 404]);
      expect(JSON.stringify(r.body)).not.toContain(b.accountId);
    }
    expect(await bRows()).toBe(before);
  });

  it("the page writes with real bodies (reply, endpoint edit, rule edit, retry all of an endpoint) on B's ids change nothing", async () => {
    const before = await bRows();
    const outboundBefore = await stack.prisma.email.count({ where: { direction: "outbound" } });
    const calls: [string, string, unknown, number[]][] = [
      ["POST", `/console/api/emails/${fb.emailId}/reply`, { text: "not yours" }, [404]],
      ["PATCH", `/console/api/endpoints/${fb.endpointId}`, { name: "mine now", url: "http://127.0.0.1:9/x" }, [404]],
      ["PATCH", `/console/api/shield-rules/${fb.ruleId}`, { name: "mine now" }, [404]],
      // A filter over A's own deliveries: it matches none (B's dead delivery stays dead: bRows below).
      ["POST", "/console/api/deliveries/retry", { endpointId: fb.endpointId }, [200]],
      ["GET", `/console/api/threads/${fb.threadId}`, undefined, [404]],
    ];
    for (const [method, path, body, statuses] of calls) {
      const r = await c.call(method, path, body);
      expect([method, path, statuses.includes(r.status)]).toEqual([method, path, true]);
      if (r.status === 200) expect(r.body).toEqual({ retried: 0 });
    }
    expect(await bRows()).toBe(before);
    expect(await stack.prisma.email.count({ where: { direction: "outbound" } })).toBe(outboundBefore);
  });

  it("lists and the overview show only A's rows", async () => {
    const lists = routes.filter((r) => r.method === "GET" && !r.path.includes(":") && !r.path.endsWith("/events"));
    expect(lists.length).toBeGreaterThanOrEqual(8);
    const bIds = Object.values(fb);
    for (const route of lists) {
      const r = await c.call("GET", route.path);
      expect([route.path, r.status]).toEqual([route.path, 200]);
      const text = JSON.stringify(r.body);
      for (const id of [...bIds, b.accountId]) expect([route.path, text.includes(id)]).toEqual([route.path, false]);
    }
    const overview = await c.call("GET", "/console/api/overview");
    expect(overview.body.account.id).toBe(a.accountId);
  });
});
