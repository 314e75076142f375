import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId } from "@mailroom/db";
import type { Fixture, Stack, TestAccount } from "@mailroom/stack";
import { concrete, http, seedEverything, startStack, targetOf } from "@mailroom/stack";
import { hashApiKey } from "../src/lib/auth.ts";
import { type RegisteredRoute, registeredRoutes } from "../src/lib/route.ts";

/** Routes that answer GET with a never-ending stream (server-sent events). */
const STREAMS = new Set(["/api/v1/events"]);

const V = "/api/v1";
const READ_ONLY = "This API key is read-only; a full-access key is needed for this operation";

/** Every row the account owns, for "nothing was performed". */
async function snapshot(stack: Stack, accountId: string) {
  const w = { where: { accountId } };
  return JSON.stringify(
    await Promise.all([
      stack.prisma.account.findUnique({ where: { id: accountId } }),
      stack.prisma.domain.findMany({ ...w, orderBy: { id: "asc" } }),
      stack.prisma.address.findMany({ ...w, orderBy: { id: "asc" } }),
      stack.prisma.endpoint.findMany({ ...w, orderBy: { id: "asc" } }),
      stack.prisma.email.findMany({ ...w, orderBy: { id: "asc" } }),
      stack.prisma.thread.findMany({ ...w, orderBy: { id: "asc" } }),
      stack.prisma.shieldRule.findMany({ ...w, orderBy: { id: "asc" } }),
      stack.prisma.delivery.findMany({ ...w, orderBy: { id: "asc" } }),
      stack.prisma.blockRecord.findMany({ ...w, orderBy: { id: "asc" } }),
    ]),
  );
}

/** A body that would succeed if it were performed. */
function bodyFor(route: RegisteredRoute, f: Fixture): unknown {
  switch (`${route.method} ${route.path.replace(V, "")}`) {
    case "POST /domains":
      return { domain: `new-${Math.random().toString(36).slice(2)}.example.com` };
    case "PATCH /domains/:id":
      return { catchAll: { enabled: true } };
    case "POST /addresses":
      return { domainId: f.domainId, localPart: "fresh" };
    case "PATCH /addresses/:id":
      return { active: false };
    case "POST /endpoints":
      return { url: "http://127.0.0.1:9/x" };
    case "PATCH /endpoints/:id":
      return { name: "renamed" };
    case "POST /shield-rules":
      return { name: "n", action: "block", conditions: [{ field: "subject", operator: "contains", value: "x" }] };
    case "PATCH /shield-rules/:id":
      return { name: "renamed" };
    case "POST /emails/:id/reply":
      return { text: "thanks" };
    default:
      return {};
  }
}

describe("authentication, scopes and tenant isolation", () => {
  let stack: Stack;
  let routes: RegisteredRoute[];

  beforeAll(async () => {
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    routes = registeredRoutes(stack.app).filter((r) => r.path.startsWith(`${V}/`) && r.path !== `${V}/openapi.json`);
  });
  afterAll(async () => {
    await stack?.close();
  });

  describe("401", () => {
    it.each([
      ["no header", undefined],
      ["empty", ""],
      ["not Bearer", "Basic c3ZjXzEyMzQ="],
      ["Bearer without a key", "Bearer "],
      ["wrong prefix", "Bearer sk_0123456789abcdefghijklmnop"],
      ["too short", "Bearer svc_abc"],
      ["bad characters", "Bearer svc_0123456789abcdef!@#$%^"],
      ["lowercase scheme and extra words", "bearer svc_0123456789abcdefghij extra"],
      ["unknown key", "Bearer svc_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"],
    ])("%s → 401 with an error body, on reads and writes", async (_name, header) => {
      for (const [method, path] of [
        ["GET", `${V}/domains`],
        ["POST", `${V}/domains`],
        ["GET", `${V}/no-such-route`],
      ] as const) {
        const r = await http(stack, method, path, { headers: header === undefined ? {} : { authorization: header } });
        expect([method, path, r.status]).toEqual([method, path, 401]);
        expect(r.body).toEqual({ error: expect.any(String) });
      }
    });

    it("a revoked key is refused at once (admin keys revoke)", async () => {
      const acct = await stack.account();
      const k = await stack.admin("keys", "create", "--account", acct.accountId, "--scope", "full");
      const key = String(k.key);
      expect((await http(stack, "GET", `${V}/domains`, { key })).status).toBe(200);
      await stack.admin("keys", "revoke", "--key", String(k.id));
      const r = await http(stack, "GET", `${V}/domains`, { key });
      expect(r).toMatchObject({ status: 401, body: { error: "Invalid or revoked API key" } });
      expect((await http(stack, "POST", `${V}/domains`, { key, body: "{}" })).status).toBe(401);
      // Other keys of the account keep working.
      expect((await acct.api("GET", `${V}/domains`)).status).toBe(200);
    });

    it("a key created before scopes existed (null scope) has full access", async () => {
      const acct = await stack.account();
      const key = "svc_legacyKey0123456789abcdefghijklmnopqrstuv";
      await stack.prisma.apiKey.create({
        data: {
          id: newId("apiKey"),
          accountId: acct.accountId,
          prefix: key.slice(0, 12),
          hash: hashApiKey(key),
          scope: null,
        },
      });
      const c = await http(stack, "POST", `${V}/domains`, {
        key,
        body: JSON.stringify({ domain: "legacy.example.com" }),
        headers: { "content-type": "application/json" },
      });
      expect(c.status).toBe(201);
      expect((await http(stack, "DELETE", `${V}/domains/${c.body.id}`, { key })).status).toBe(204);
    });
  });

  describe("read-only keys (scope matrix)", () => {
    let full: TestAccount;
    let f: Fixture;
    let readKey: string;
    beforeAll(async () => {
      full = await stack.account({ scope: "full" });
      f = await seedEverything(stack, full, "scope.example.com");
      readKey = String((await stack.admin("keys", "create", "--account", full.accountId)).key); // default scope: read
    });

    it("every write route → 403 with the spec's message, and nothing is performed", async () => {
      const writes = routes.filter((r) => r.method !== "GET" && r.method !== "HEAD");
      expect(writes.length).toBeGreaterThanOrEqual(10);
      const before = await snapshot(stack, full.accountId);
      for (const route of writes) {
        const r = await http(stack, route.method, concrete(route.path, f), {
          key: readKey,
          body: JSON.stringify(bodyFor(route, f)),
          headers: { "content-type": "application/json" },
        });
        expect([route.method, route.path, r.status, r.body]).toEqual([
          route.method,
          route.path,
          403,
          { error: READ_ONLY },
        ]);
      }
      // Writes to paths that do not even exist are writes too.
      expect((await http(stack, "PUT", `${V}/domains/${f.domainId}`, { key: readKey })).status).toBe(403);
      expect(await snapshot(stack, full.accountId)).toBe(before);
    });

    it("the same writes with the account's full key are performed (the matrix can fail)", async () => {
      const r = await full.api("PATCH", `${V}/domains/${f.domainId}`, { catchAll: { enabled: true } });
      expect(r.status).toBe(200);
    });

    it("every read route (GET and HEAD) works with a read-only key", async () => {
      const reads = routes.filter((r) => r.method === "GET");
      expect(reads.length).toBeGreaterThanOrEqual(12);
      for (const route of reads) {
        // A stream never ends, so GET is read as far as its status in e2e/events-sse.test.ts; HEAD
        // answers its headers without a stream.
        for (const method of STREAMS.has(route.path) ? ["HEAD"] : ["GET", "HEAD"]) {
          const r = await http(stack, method, concrete(route.path, f), { key: readKey });
          expect([method, route.path, r.status]).toEqual([method, route.path, 200]);
        }
      }
    });
  });

  describe("another account's resources (isolation matrix)", () => {
    let mine: TestAccount;
    let theirs: TestAccount;
    let own: Fixture;
    let other: Fixture;
    beforeAll(async () => {
      mine = await stack.account();
      theirs = await stack.account();
      own = await seedEverything(stack, mine, "mine.example.com");
      other = await seedEverything(stack, theirs, "theirs.example.com");
    });

    it("every route with an id → 404 for another account's id, and nothing changes", async () => {
      const withId = routes.filter((r) => r.path.includes(":id"));
      expect(withId.length).toBeGreaterThanOrEqual(14);
      const before = await snapshot(stack, theirs.accountId);
      for (const route of withId) {
        expect([route.path, targetOf(route.path, other)]).toEqual([route.path, expect.any(String)]);
        const r = await http(stack, route.method, concrete(route.path, other), {
          key: mine.key,
          ...(route.method === "GET" ? {} : { body: JSON.stringify(bodyFor(route, own)) }),
          headers: { "content-type": "application/json" },
        });
        expect([route.method, route.path, r.status]).toEqual([route.method, route.path, 404]);
        expect(r.body).toEqual({ error: expect.any(String) });
      }
      expect(await snapshot(stack, theirs.accountId)).toBe(before);
    });

    it("the same routes with the caller's own ids do not 404 (the matrix can fail)", async () => {
      for (const route of routes.filter((r) => r.method === "GET" && r.path.includes(":id"))) {
        const r = await http(stack, "GET", concrete(route.path, own), { key: mine.key });
        expect([route.path, r.status]).toEqual([route.path, 200]);
      }
    });

    it("another account's endpoint or domain in a body → 400 unknown", async () => {
      const before = await snapshot(stack, mine.accountId);
      const cases: [string, string, unknown, string][] = [
        [
          "POST",
          "/addresses",
          { domainId: own.domainId, localPart: "z", endpointId: other.endpointId },
          `endpointId: unknown endpoint ${other.endpointId}`,
        ],
        [
          "POST",
          "/addresses",
          { domainId: other.domainId, localPart: "z" },
          `domainId: unknown domain ${other.domainId}`,
        ],
        [
          "PATCH",
          `/addresses/${own.addressId}`,
          { endpointId: other.endpointId },
          `endpointId: unknown endpoint ${other.endpointId}`,
        ],
        [
          "PATCH",
          `/domains/${own.domainId}`,
          { catchAll: { endpointId: other.endpointId } },
          `catchAll.endpointId: unknown endpoint ${other.endpointId}`,
        ],
      ];
      for (const [method, path, body, error] of cases) {
        const r = await mine.api(method, `${V}${path}`, body);
        expect([method, path, r.status, r.body]).toEqual([method, path, 400, { error }]);
      }
      expect(await snapshot(stack, mine.accountId)).toBe(before);
    });

    it("every list is scoped to the caller", async () => {
      const theirIds = new Set(Object.values(other));
      // Streams (GET /events) are scoped by their own test (e2e/events-sse.test.ts).
      for (const route of routes.filter((r) => r.method === "GET" && !r.path.includes(":") && !STREAMS.has(r.path))) {
        const r = await mine.api("GET", route.path);
        expect([route.path, r.status]).toEqual([route.path, 200]);
        const leaked =
          JSON.stringify(r.body)
            .match(/[a-z]+_[0-9A-Za-z]{22}/g)
            ?.filter((id) => theirIds.has(id)) ?? [];
        expect([route.path, leaked]).toEqual([route.path, []]);
      }
      for (const q of [`domainId=${other.domainId}`, `threadId=${other.threadId}`, `addressId=${other.addressId}`]) {
        expect((await mine.api("GET", `${V}/emails?${q}`)).body).toEqual({ data: [], nextCursor: null });
      }
      expect((await mine.api("GET", `${V}/addresses?domainId=${other.domainId}`)).body).toEqual({
        data: [],
        nextCursor: null,
      });
    });
  });
});
