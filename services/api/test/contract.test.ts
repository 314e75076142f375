/**
 * Spec rows that no other test pins down to the letter (docs/contract-coverage.md maps every row):
 * error bodies for every status, OPTIONS and unusual methods, the order 401 → 403 → 429 → routing,
 * /mcp's HTTP-level answers, timestamp format in every response, nextCursor on every list, the
 * delivery headers of the test operation, and body ids of other accounts.
 */
import { createHmac } from "node:crypto";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId } from "@mailroom/db";
import type { Fixture, Stack, TestAccount } from "@mailroom/stack";
import { concrete, http, seedEverything, startStack } from "@mailroom/stack";
import { type Receiver, seedEmail, startReceiver } from "@mailroom/testing";
import { type RegisteredRoute, registeredRoutes } from "../src/lib/route.ts";

/** GET /events streams until the client leaves: e2e/events-sse.test.ts reads it; the loops here skip it. */
const isEventStream = (r: RegisteredRoute) => r.doc?.responses[200]?.contentType === "text/event-stream";

const V = "/api/v1";
const READ_ONLY = "This API key is read-only; a full-access key is needed for this operation";
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const JSON_TYPE = /^application\/json\b/;
const LIMIT = 8;

/** Every `…At` value in a JSON document, with its path. */
function timestamps(value: unknown, path = "$"): [string, unknown][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => timestamps(v, `${path}[${i}]`));
  if (value && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) =>
      /At$/.test(k) && v !== null ? [[`${path}.${k}`, v] as [string, unknown]] : timestamps(v, `${path}.${k}`),
    );
  }
  return [];
}

describe("contract details (spec §2, §4–§8)", () => {
  let stack: Stack;
  /** A second stack with a per-key limit of LIMIT requests, for the order of checks around 429. */
  let limited: Stack;
  let routes: RegisteredRoute[];
  let receiver: Receiver;

  beforeAll(async () => {
    const services = { ingest: false, ruleEngine: false, dispatcher: false };
    stack = await startStack({ services });
    limited = await startStack({ services, rateLimit: { limit: LIMIT, windowSeconds: 600 } });
    receiver = await startReceiver();
    routes = registeredRoutes(stack.app).filter((r) => r.path.startsWith(`${V}/`));
  });
  afterAll(async () => {
    await receiver?.close();
    await limited?.close();
    await stack?.close();
  });

  const fresh = (scope: "read" | "full" = "full") => stack.account({ scope });
  const readKeyOf = async (a: TestAccount) =>
    String((await stack.admin("keys", "create", "--account", a.accountId, "--scope", "read")).key);
  const json = (key: string, body: string | Buffer, headers: Record<string, string> = {}) => ({
    key,
    body,
    headers: { "content-type": "application/json", ...headers },
  });

  describe("§7 error bodies are { error: string } for every status", () => {
    it.each([
      ["unknown route", 404, "GET", `${V}/nothing-here`, {}],
      ["outside /api/v1", 404, "GET", "/nothing-here", {}],
      ["/api/v1 itself", 404, "GET", `${V}`, {}],
      ["wrong method", 405, "PUT", `${V}/domains`, {}],
      ["malformed JSON", 400, "POST", `${V}/domains`, { json: "{" }],
      ["JSON that is not an object", 400, "POST", `${V}/domains`, { json: "[]" }],
      ["unsupported Content-Encoding", 415, "POST", `${V}/domains`, { json: "{}", encoding: "compress9" }],
      ["unsupported charset", 415, "POST", `${V}/domains`, { json: "{}", type: "application/json; charset=latin1" }],
      ["gzip that does not decompress", 400, "POST", `${V}/domains`, { json: "not gzip", encoding: "gzip" }],
      ["too large", 413, "POST", `${V}/domains`, { json: JSON.stringify({ pad: "x".repeat(1_100_000) }) }],
    ] as const)("%s → %d (%s %s)", async (_name, status, method, path, opts) => {
      const a = await fresh();
      const o = opts as { json?: string; encoding?: string; type?: string };
      const r = await http(stack, method, path, {
        key: a.key,
        ...(o.json !== undefined ? { body: o.json } : {}),
        headers: {
          ...(o.json !== undefined ? { "content-type": o.type ?? "application/json" } : {}),
          ...(o.encoding ? { "content-encoding": o.encoding } : {}),
        },
      });
      expect([path, r.status]).toEqual([path, status]);
      expect(r.headers.get("content-type")).toMatch(JSON_TYPE);
      expect(r.body).toEqual({ error: expect.any(String) });
      expect(r.body.error.length).toBeGreaterThan(0);
    });

    it("a gzip body is decoded (so the 400 above is about the bytes, not about gzip)", async () => {
      const a = await fresh();
      const r = await http(
        stack,
        "POST",
        `${V}/domains`,
        json(a.key, gzipSync(JSON.stringify({ domain: "gzip.example.com" })), { "content-encoding": "gzip" }),
      );
      expect(r.status).toBe(201);
      const bad = await http(stack, "POST", `${V}/domains`, json(a.key, "xx", { "content-encoding": "gzip" }));
      expect(bad.body.error).toMatch(/^body: could not be decoded as gzip/);
    });

    it("401 and 403 bodies; 403 says read-only and full-access", async () => {
      const r401 = await http(stack, "GET", `${V}/domains`);
      expect(r401).toMatchObject({ status: 401, body: { error: expect.any(String) } });
      const reader = await fresh("read");
      const r403 = await http(stack, "POST", `${V}/domains`, json(reader.key, "{}"));
      expect(r403).toMatchObject({ status: 403, body: { error: READ_ONLY } });
      expect(r403.body.error).toMatch(/read-only/);
      expect(r403.body.error).toMatch(/full-access/);
    });
  });

  describe("§5 rule 5: every method but GET and HEAD is a write", () => {
    it("a read-only key gets 403 for POST, PUT, PATCH, DELETE, OPTIONS and unknown methods, on known and unknown paths", async () => {
      const a = await fresh();
      const f = await seedEverything(stack, a, "methods.example.com");
      const reader = await readKeyOf(a);
      for (const path of [`${V}/domains`, `${V}/domains/${f.domainId}`, `${V}/no-such-thing`]) {
        for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PURGE"]) {
          const r = await http(stack, method, path, json(reader, "{}"));
          expect([method, path, r.status, r.body]).toEqual([method, path, 403, { error: READ_ONLY }]);
        }
      }
      expect(await stack.prisma.domain.count({ where: { accountId: a.accountId } })).toBe(1);
    });

    it("OPTIONS with a full key: 204 and Allow on a known path (no text body), 404 on an unknown one", async () => {
      const a = await fresh();
      const f = await seedEverything(stack, a, "options.example.com");
      const list = await http(stack, "OPTIONS", `${V}/domains`, { key: a.key });
      expect(list.status).toBe(204);
      expect(list.bytes.length).toBe(0);
      expect(list.headers.get("allow")).toBe("GET, HEAD, POST");
      const one = await http(stack, "OPTIONS", `${V}/domains/${f.domainId}`, { key: a.key });
      expect([one.status, one.headers.get("allow")]).toEqual([204, "DELETE, GET, HEAD, PATCH"]);
      const none = await http(stack, "OPTIONS", `${V}/no-such-thing`, { key: a.key });
      expect(none).toMatchObject({ status: 404, body: { error: expect.any(String) } });
    });

    it("HEAD on every GET route, with a read-only key: the GET's status and headers, no body", async () => {
      const a = await fresh();
      const f = await seedEverything(stack, a, "head-all.example.com");
      const key = await readKeyOf(a);
      const gets = routes.filter((r) => r.method === "GET" && r.path !== `${V}/openapi.json` && !isEventStream(r));
      expect(gets.length).toBeGreaterThanOrEqual(18);
      for (const route of gets) {
        const get = await http(stack, "GET", concrete(route.path, f), { key });
        const head = await http(stack, "HEAD", concrete(route.path, f), { key });
        expect([route.path, get.status, head.status, head.bytes.length]).toEqual([route.path, 200, 200, 0]);
        expect([route.path, head.headers.get("content-type")]).toEqual([route.path, get.headers.get("content-type")]);
      }
    });
  });

  describe("order of checks: 401 → 403 → 429 → routing and validation", () => {
    it("a revoked read-only key writing gets 401, not 403", async () => {
      const a = await limited.account();
      const k = await limited.admin("keys", "create", "--account", a.accountId, "--scope", "read");
      await limited.admin("keys", "revoke", "--key", String(k.id));
      const r = await http(limited, "POST", `${V}/domains`, json(String(k.key), "{}"));
      expect(r).toMatchObject({ status: 401, body: { error: "Invalid or revoked API key" } });
    });

    it("401 comes before the rate limiter (no RateLimit headers)", async () => {
      const r = await http(limited, "GET", `${V}/domains`, { key: "svc_unknownunknownunknownunknown" });
      expect(r.status).toBe(401);
      expect(r.headers.get("ratelimit-limit")).toBeNull();
    });

    it("403 comes before the rate limiter: refused writes are not counted, and stay 403 once the budget is spent", async () => {
      const reader = await limited.account({ scope: "read" });
      for (let i = 0; i < LIMIT + 2; i++) {
        expect((await http(limited, "DELETE", `${V}/domains/dom_x`, { key: reader.key })).status).toBe(403);
      }
      const first = await http(limited, "GET", `${V}/domains`, { key: reader.key });
      expect([first.status, first.headers.get("ratelimit-remaining")]).toEqual([200, String(LIMIT - 1)]);
      for (let i = 1; i < LIMIT; i++) await http(limited, "GET", `${V}/domains`, { key: reader.key });
      expect((await http(limited, "GET", `${V}/domains`, { key: reader.key })).status).toBe(429);
      expect((await http(limited, "POST", `${V}/domains`, json(reader.key, "{}"))).status).toBe(403);
    });

    it("429 comes before routing and validation, with the error body", async () => {
      const a = await limited.account();
      for (let i = 0; i < LIMIT; i++) await http(limited, "GET", `${V}/account`, { key: a.key });
      for (const [method, path, body] of [
        ["GET", `${V}/no-such-thing`, undefined],
        ["PUT", `${V}/domains`, undefined],
        ["POST", `${V}/domains`, "{"],
        ["GET", `${V}/emails?cursor=garbage`, undefined],
      ] as const) {
        const r = await http(limited, method, path, body === undefined ? { key: a.key } : json(a.key, body));
        expect([method, path, r.status, r.body]).toEqual([method, path, 429, { error: expect.any(String) }]);
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
      }
    });
  });

  describe("/mcp: HTTP-level answers", () => {
    const mcp = (key: string | undefined, method: string, headers: Record<string, string> = {}, body?: string) =>
      http(stack, method, "/mcp", { ...(key ? { key } : {}), headers, ...(body !== undefined ? { body } : {}) });
    const LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const ACCEPT = "application/json, text/event-stream";

    it("401 without a key, 405 { error } for GET and DELETE, 403 for a read-only key's DELETE or OPTIONS", async () => {
      const a = await fresh();
      const reader = await readKeyOf(a);
      expect(await mcp(undefined, "POST", { "content-type": "application/json", accept: ACCEPT }, LIST)).toMatchObject({
        status: 401,
        body: { error: expect.any(String) },
      });
      for (const method of ["GET", "DELETE"]) {
        const r = await mcp(a.key, method);
        expect([method, r.status, r.headers.get("allow"), r.body]).toEqual([
          method,
          405,
          "POST",
          { error: `Method ${method} is not allowed on /mcp; allowed: POST` },
        ]);
      }
      expect((await mcp(reader, "GET")).status).toBe(405);
      for (const method of ["DELETE", "OPTIONS", "PUT"]) {
        expect([method, (await mcp(reader, method)).body]).toEqual([method, { error: READ_ONLY }]);
      }
    });

    it("406 and 415 { error } for a request that is not an MCP JSON exchange; the JSON-RPC call works", async () => {
      const a = await fresh();
      const noAccept = await mcp(a.key, "POST", { "content-type": "application/json" }, LIST);
      expect(noAccept).toMatchObject({ status: 406, body: { error: expect.stringMatching(/^Accept: /) } });
      const text = await mcp(a.key, "POST", { "content-type": "text/plain", accept: ACCEPT }, LIST);
      expect(text).toMatchObject({ status: 415, body: { error: "Content-Type: must be application/json" } });
      const bad = await mcp(a.key, "POST", { "content-type": "application/json", accept: ACCEPT }, "{");
      expect(bad).toMatchObject({ status: 400, body: { error: "body: malformed JSON" } });
      const ok = await mcp(a.key, "POST", { "content-type": "application/json", accept: ACCEPT }, LIST);
      expect(ok.status).toBe(200);
      expect(ok.body.result.tools.length).toBeGreaterThan(10);
    });
  });

  describe("§2 timestamps: ISO 8601 UTC with milliseconds, nested objects included", () => {
    it("every GET route and the write responses carry only YYYY-MM-DDTHH:MM:SS.mmmZ", async () => {
      const a = await stack.account({ plan: "scale" });
      const f = await seedEverything(stack, a, "stamps.example.com");
      const seen: string[] = [];
      const check = (label: string, body: unknown) => {
        for (const [path, v] of timestamps(body)) {
          expect([label, path, v]).toEqual([label, path, expect.stringMatching(TIMESTAMP)]);
          seen.push(path.replace(/\[\d+\]/g, "[]"));
        }
      };
      for (const route of routes.filter(
        (r) => r.method === "GET" && r.path !== `${V}/openapi.json` && !isEventStream(r),
      )) {
        const r = await http(stack, "GET", concrete(route.path, f), { key: a.key });
        if (r.headers.get("content-type")?.startsWith("application/json")) check(route.path, r.body);
      }
      const rotated = await http(stack, "POST", `${V}/endpoints/${f.endpointId}/rotate-secret`, { key: a.key });
      check("rotate-secret", rotated.body);
      const retried = await http(stack, "POST", `${V}/deliveries/${f.deliveryId}/retry`, { key: a.key });
      check("retry", retried.body);
      // The nested ones the brief calls out: delivery attempts, block records, thread summaries, account.
      for (const p of [
        "$.attempts[].startedAt",
        "$.attempts[].finishedAt",
        "$.receivedAt",
        "$.data[].lastMessageAt",
        "$.createdAt",
        "$.previousSecretExpiresAt",
        "$.nextAttemptAt",
      ]) {
        expect([p, seen.includes(p)]).toEqual([p, true]);
      }
    });
  });

  describe("§8 pagination: nextCursor is non-null exactly when more results exist, on every list", () => {
    it.each(["/domains", "/addresses", "/endpoints", "/emails", "/threads", "/deliveries", "/blocks"])(
      "%s",
      async (path) => {
        const a = await stack.account({ plan: "scale" });
        const f = await seedEverything(stack, a, `pages${path.slice(1)}.example.com`); // one of each
        // Two more of each, so the list holds exactly 3.
        for (let i = 0; i < 2; i++) {
          const dom = await a.api("POST", `${V}/domains`, { domain: `p${i}-${path.slice(1)}.example.com` });
          await a.api("POST", `${V}/addresses`, { domainId: f.domainId, localPart: `p${i}` });
          await a.api("POST", `${V}/endpoints`, { url: "http://127.0.0.1:9/p" });
          const em = await seedEmail(stack.prisma, a.accountId, { receivedAt: new Date(Date.UTC(2026, 0, 2 + i)) });
          await stack.prisma.delivery.create({
            data: {
              id: newId("delivery"),
              accountId: a.accountId,
              emailId: em.id,
              endpointId: f.endpointId as string,
              maxAttempts: 5,
            },
          });
          await stack.prisma.blockRecord.create({
            data: {
              id: newId("block"),
              accountId: a.accountId,
              ruleId: f.ruleId as string,
              ruleName: "r",
              sender: "s@x.example",
              recipient: `info@${dom.body.domain}`,
              subject: "b",
              receivedAt: new Date(Date.UTC(2026, 0, 2 + i)),
            },
          });
        }
        const key = await readKeyOf(a);
        const page = async (q: string) => (await http(stack, "GET", `${V}${path}?${q}`, { key })).body;
        const all = await page("limit=3");
        expect([path, all.data.length, all.nextCursor]).toEqual([path, 3, null]);
        expect((await page("")).nextCursor).toBeNull();
        const first = await page("limit=2");
        expect([path, first.data.length, first.nextCursor]).toEqual([path, 2, expect.any(String)]);
        const last = await page(`limit=2&cursor=${encodeURIComponent(first.nextCursor)}`);
        expect([path, last.data.length, last.nextCursor]).toEqual([path, 1, null]);
        expect([...first.data, ...last.data].map((x: { id: string }) => x.id)).toEqual(
          all.data.map((x: { id: string }) => x.id),
        );
        const one = await page("limit=1");
        expect(one.nextCursor).toEqual(expect.any(String));
        const bad = await http(stack, "GET", `${V}${path}?cursor=garbage`, { key });
        expect([path, bad.status, bad.body]).toEqual([path, 400, { error: "Invalid cursor" }]);
        const big = await http(stack, "GET", `${V}${path}?limit=101`, { key });
        expect([path, big.status]).toEqual([path, 400]);
      },
    );
  });

  describe("§1: another account's ids", () => {
    let mine: TestAccount;
    let own: Fixture;
    let other: Fixture;
    beforeAll(async () => {
      mine = await stack.account({ plan: "scale" });
      const theirs = await stack.account({ plan: "scale" });
      own = await seedEverything(stack, mine, "mine-ids.example.com");
      other = await seedEverything(stack, theirs, "theirs-ids.example.com");
      await stack.admin("domains", "verify", "--domain", "mine-ids.example.com", "--force");
      await stack.admin("domains", "verify", "--domain", "theirs-ids.example.com", "--force");
    });
    const as = (method: string, path: string, body?: unknown) =>
      http(stack, method, `${V}${path}`, body === undefined ? { key: mine.key } : json(mine.key, JSON.stringify(body)));

    it("in bodies → 400 naming the field: shield-rule ids, catch-all endpoint, send from-address", async () => {
      const cond = [{ field: "subject", operator: "contains", value: "x" }];
      const cases: [string, string, unknown, RegExp][] = [
        [
          "POST",
          "/shield-rules",
          { name: "d", action: "block", conditions: cond, domainId: other.domainId },
          /^domainId: /,
        ],
        [
          "POST",
          "/shield-rules",
          { name: "a", action: "block", conditions: cond, addressId: other.addressId },
          /^addressId: /,
        ],
        [
          "POST",
          "/shield-rules",
          { name: "r", action: "route", conditions: cond, endpointIds: [other.endpointId] },
          /^endpointIds\[0\]: unknown endpoint/,
        ],
        ["PATCH", `/shield-rules/${own.ruleId}`, { endpointIds: [other.endpointId] }, /^endpointIds/],
        [
          "PATCH",
          `/domains/${own.domainId}`,
          { catchAll: { endpointId: other.endpointId } },
          /^catchAll\.endpointId: /,
        ],
        [
          "POST",
          "/addresses",
          { domainId: own.domainId, localPart: "x", endpointId: other.endpointId },
          /^endpointId: /,
        ],
        ["PATCH", `/addresses/${own.addressId}`, { endpointId: other.endpointId }, /^endpointId: unknown endpoint/],
        [
          "POST",
          "/emails",
          { from: "info@theirs-ids.example.com", to: "x@y.example", subject: "s", text: "t" },
          /^from: /,
        ],
      ];
      const before = await stack.prisma.shieldRule.count({ where: { accountId: mine.accountId } });
      for (const [method, path, body, error] of cases) {
        const r = await as(method, path, body);
        expect([method, path, r.status]).toEqual([method, path, 400]);
        expect([path, r.body.error]).toEqual([path, expect.stringMatching(error)]);
      }
      expect(await stack.prisma.shieldRule.count({ where: { accountId: mine.accountId } })).toBe(before);
      expect(await stack.prisma.email.count({ where: { accountId: mine.accountId, direction: "outbound" } })).toBe(0);
    });

    it("in paths → 404: reply to their email, their thread; in list filters → an empty page", async () => {
      expect((await as("POST", `/emails/${other.emailId}/reply`, { text: "hi" })).status).toBe(404);
      expect((await as("GET", `/threads/${other.threadId}`)).status).toBe(404);
      for (const q of [`endpointId=${other.endpointId}`, `emailId=${other.emailId}`]) {
        expect([q, (await as("GET", `/deliveries?${q}`)).body]).toEqual([q, { data: [], nextCursor: null }]);
      }
      expect((await as("GET", `/blocks?ruleId=${other.ruleId}`)).body).toEqual({ data: [], nextCursor: null });
    });

    it("a thread that exists but has no messages → 404", async () => {
      const id = newId("thread");
      await stack.prisma.thread.create({
        data: { id, accountId: mine.accountId, subject: "empty", lastMessageAt: new Date() },
      });
      expect(await as("GET", `/threads/${id}`)).toMatchObject({ status: 404, body: { error: "Thread not found" } });
    });
  });

  describe("§6 headers of POST /endpoints/{id}/test", () => {
    it("X-Service-Event/-Delivery-Id/-Signature, identical legacy copies, custom headers, t=…,v1=… over <t>.<body>", async () => {
      const a = await fresh();
      receiver.respond(() => ({ status: 200, body: "fine" }));
      const ep = await a.api("POST", `${V}/endpoints`, { url: `${receiver.url}/t`, headers: { "X-Team": "ops" } });
      const before = receiver.requests.length;
      const r = await a.api("POST", `${V}/endpoints/${ep.body.id}/test`);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        ok: true,
        status: 200,
        durationMs: expect.any(Number),
        error: null,
        responseBody: "fine",
      });
      const req = receiver.requests[before];
      if (!req) throw new Error("the receiver got nothing");
      const h = req.headers;
      expect(h["x-service-event"]).toBe("email.received");
      expect(h["x-service-delivery-id"]).toMatch(/^dlv_/);
      expect(h["x-service-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      for (const name of ["event", "delivery-id", "signature"]) {
        expect([name, h[`x-inbound-${name}`]]).toEqual([name, h[`x-service-${name}`]]);
      }
      expect(h["x-team"]).toBe("ops");
      expect(h["content-type"]).toMatch(/^application\/json/);
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(h["x-service-signature"])) ?? [];
      const expected = createHmac("sha256", ep.body.secret).update(`${t}.`).update(req.body).digest("hex");
      expect(v1).toBe(expected);
      expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(300);
      const payload = JSON.parse(req.body.toString());
      expect(payload).toMatchObject({ id: h["x-service-delivery-id"], type: "email.received" });
    });
  });
});
