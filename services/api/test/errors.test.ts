import type { Server } from "node:http";
import { type AddressInfo, createServer, type Socket, connect as tcpConnect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createCursorCodec, createPrisma } from "@mailroom/db";
import { createEgressResolver } from "@mailroom/egress";
import { createLogger } from "@mailroom/log";
import { createRedis } from "@mailroom/queues";
import { http, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { waitFor } from "@mailroom/testing";
import { type AppDeps, createApp } from "../src/app.ts";
import type { RateLimitConfig } from "../src/lib/rate-limit.ts";
import { redisReady } from "../src/lib/redis-ready.ts";

const V = "/api/v1";

/**
 * Another API replica (or a deliberately broken one) beside the stack's, on its own port. Like
 * main.ts it listens once its Redis is ready; `over.redis` replicas are the test's business.
 */
async function replica(stack: Stack, over: Partial<AppDeps>) {
  const redis = createRedis(stack.env.redisUrl, "producer");
  redis.on("error", () => undefined);
  if (!over.redis) await redisReady(redis);
  const app = createApp({
    prisma: stack.prisma,
    redis,
    logger: createLogger("test", "silent"),
    bodyLimit: "1mb",
    cursors: createCursorCodec("test-cursor-secret"),
    checkDestination: async () => ({ ok: true }),
    egressResolver: createEgressResolver(),
    config: {
      mxHost: "mx.test.example",
      dkimDomain: "example.com",
      publicApiUrl: "http://x",
      allowPrivateDestinations: true,
    },
    ...over,
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    get: (path: string, key: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } }),
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      redis.disconnect();
    },
    post: (path: string, key: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
  };
}

/** A TCP gate in front of Redis: connections are accepted but carry nothing until open(). */
async function redisGate(target: string) {
  const { hostname, port } = new URL(target);
  const held: Socket[] = [];
  let opened = false;
  const pipe = (client: Socket) => {
    const up = tcpConnect(Number(port), hostname);
    client.pipe(up).pipe(client);
    up.on("error", () => client.destroy());
    client.on("error", () => up.destroy());
  };
  const server = createServer((client) => {
    client.on("error", () => undefined);
    if (opened) pipe(client);
    else {
      client.pause();
      held.push(client);
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    open() {
      opened = true;
      for (const c of held.splice(0)) pipe(c);
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

describe("errors, HEAD, request ids and rate limits", () => {
  let stack: Stack;
  let acct: TestAccount;

  beforeAll(async () => {
    stack = await startStack({
      services: { ingest: false, ruleEngine: false, dispatcher: false },
      rateLimit: { limit: 5, windowSeconds: 86_400 },
    });
    acct = await stack.account();
  });
  afterAll(async () => {
    await stack?.close();
  });

  // Each test below that is not about rate limits uses a fresh key, so 5 requests are plenty.
  const fresh = async () => stack.account();

  it("malformed JSON → 400, with the error body", async () => {
    const a = await fresh();
    const r = await http(stack, "POST", `${V}/domains`, {
      key: a.key,
      body: '{"domain": "x.example.com",',
      headers: { "content-type": "application/json" },
    });
    expect(r).toMatchObject({ status: 400, body: { error: "body: malformed JSON" } });
    expect(await stack.prisma.domain.count({ where: { accountId: a.accountId } })).toBe(0);
  });

  it("unknown route → 404; wrong method → 405 with Allow", async () => {
    const a = await fresh();
    const nf = await http(stack, "GET", `${V}/nothing-here`, { key: a.key });
    expect(nf).toMatchObject({ status: 404, body: { error: "No route for GET /api/v1/nothing-here" } });
    const put = await http(stack, "PUT", `${V}/domains/dom_abcdefghijklmnopqrstuv`, { key: a.key });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("DELETE, GET, HEAD, PATCH");
    expect(put.body.error).toMatch(/^Method PUT is not allowed on \/api\/v1\/domains\/dom_abcdefghijklmnopqrstuv/);
    const del = await http(stack, "DELETE", `${V}/account`, { key: a.key });
    expect(del.status).toBe(405);
    expect(del.headers.get("allow")).toBe("GET, HEAD, PATCH");
    expect((await http(stack, "GET", "/nope", { key: a.key })).status).toBe(404);
  });

  it("oversized body → 413, nothing stored", async () => {
    const a = await fresh();
    const big = JSON.stringify({ domain: "big.example.com", pad: "x".repeat(1_100_000) });
    const r = await http(stack, "POST", `${V}/domains`, {
      key: a.key,
      body: big,
      headers: { "content-type": "application/json" },
    });
    expect(r).toMatchObject({ status: 413, body: { error: "body: request body is too large" } });
    expect(await stack.prisma.domain.count({ where: { accountId: a.accountId } })).toBe(0);
  });

  it("HEAD works wherever GET does: same status and headers, no body", async () => {
    const a = await fresh();
    const d = await a.api("POST", `${V}/domains`, { domain: "head.example.com" });
    const get = await http(stack, "GET", `${V}/domains/${d.body.id}`, { key: a.key });
    const head = await http(stack, "HEAD", `${V}/domains/${d.body.id}`, { key: a.key });
    expect(head.status).toBe(200);
    expect(head.bytes.length).toBe(0);
    expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
    expect(head.headers.get("content-length")).toBe(get.headers.get("content-length"));
    expect((await http(stack, "HEAD", `${V}/domains/dom_missing000000000000`, { key: a.key })).status).toBe(404);
  });

  it("every response carries X-Request-Id; a sane caller-supplied one is echoed", async () => {
    const a = await fresh();
    const r = await http(stack, "GET", `${V}/domains`, { key: a.key, headers: { "x-request-id": "trace-123" } });
    expect(r.headers.get("x-request-id")).toBe("trace-123");
    const bad = await http(stack, "GET", `${V}/domains`, { key: a.key, headers: { "x-request-id": "a b<c>" } });
    expect(bad.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect((await http(stack, "GET", `${V}/domains`)).headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("an unexpected failure → 500 naming only the request id", async () => {
    const broken = createPrisma("postgresql://postgres@127.0.0.1:5432/mailroom_no_such_database_here", { max: 1 });
    const r = await replica(stack, { prisma: broken });
    try {
      const res = await r.get(`${V}/domains`, acct.key);
      const id = res.headers.get("x-request-id");
      expect(res.status).toBe(500);
      expect(id).toBeTruthy();
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: `Internal server error (request ${id})` });
      expect(text).not.toMatch(/database|prisma|postgres|stack|\bat\b/i);
    } finally {
      await r.close();
      await broken.$disconnect();
    }
  });

  describe("rate limits", () => {
    it("per key: RateLimit-* headers on every response, 429 with Retry-After past the limit", async () => {
      const a = await fresh();
      const remaining: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await http(stack, "GET", `${V}/domains`, { key: a.key });
        expect(r.status).toBe(200);
        expect(r.headers.get("ratelimit-limit")).toBe("5");
        expect(Number(r.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
        expect(Number(r.headers.get("ratelimit-reset"))).toBeLessThanOrEqual(86_400);
        remaining.push(r.headers.get("ratelimit-remaining") as string);
      }
      expect(remaining).toEqual(["4", "3", "2", "1", "0"]);
      for (const method of ["GET", "POST"]) {
        const r = await http(stack, method, `${V}/domains`, {
          key: a.key,
          ...(method === "POST" ? { body: JSON.stringify({ domain: "limited.example.com" }) } : {}),
        });
        expect(r.status).toBe(429);
        expect(r.body).toEqual({ error: "Rate limit of 5 requests per 86400 s exceeded" });
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(r.headers.get("ratelimit-remaining")).toBe("0");
      }
      expect(await stack.prisma.domain.count({ where: { accountId: a.accountId } })).toBe(0);
      // Another key (even of the same account) has its own budget.
      const k2 = String((await stack.admin("keys", "create", "--account", a.accountId)).key);
      expect((await http(stack, "GET", `${V}/domains`, { key: k2 })).status).toBe(200);
      // Errors count and carry the headers too.
      const b = await fresh();
      const nf = await http(stack, "GET", `${V}/domains/dom_nope0000000000000000`, { key: b.key });
      expect(nf.status).toBe(404);
      expect(nf.headers.get("ratelimit-remaining")).toBe("4");
    });

    it("is shared by every API replica (the count lives in Redis)", async () => {
      const a = await fresh();
      const config: RateLimitConfig = {
        limit: 4,
        windowSeconds: 86_400,
        prefix: `${stack.env.redisPrefix}:shared`,
      };
      const r1 = await replica(stack, { rateLimit: config });
      const r2 = await replica(stack, { rateLimit: config });
      try {
        const statuses: number[] = [];
        for (const r of [r1, r2, r1, r2, r1, r2]) statuses.push((await r.get(`${V}/domains`, a.key)).status);
        expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
        const last = await r2.get(`${V}/domains`, a.key);
        expect(last.headers.get("ratelimit-limit")).toBe("4");
        expect(Number(last.headers.get("retry-after"))).toBeGreaterThan(0);
      } finally {
        await r1.close();
        await r2.close();
      }
    });

    it("a request while the limiter's Redis is still connecting waits for it and is counted", async () => {
      const a = await fresh();
      const gate = await redisGate(stack.env.redisUrl);
      const redis = createRedis(gate.url, "producer");
      redis.on("error", () => undefined);
      const config: RateLimitConfig = {
        limit: 3,
        windowSeconds: 86_400,
        prefix: `${stack.env.redisPrefix}:gate`,
        // Long enough that the wait never depends on the machine's speed.
        readyWaitMs: 60_000,
      };
      const r = await replica(stack, { redis, rateLimit: config });
      try {
        expect(redis.status).not.toBe("ready");
        const waiting = redis.listenerCount("ready");
        let settled = false;
        const first = r.get(`${V}/domains`, a.key).finally(() => {
          settled = true;
        });
        // Either the limiter waits for the connection (a "ready" listener appears) or — the bug —
        // the request was answered before Redis was ever ready.
        await waitFor(async () => settled || redis.listenerCount("ready") > waiting, {
          what: "request reached the limiter",
        });
        gate.open();
        const res = await first;
        expect(res.status).toBe(200);
        expect(res.headers.get("ratelimit-remaining")).toBe("2");
        expect((await r.get(`${V}/domains`, a.key)).headers.get("ratelimit-remaining")).toBe("1");
      } finally {
        await r.close();
        redis.disconnect();
        await gate.close();
      }
    });

    it("while Redis is unreachable: reads pass uncounted, writes get 503 and are not performed", async () => {
      const a = await fresh();
      const dead = createRedis("redis://127.0.0.1:1", "producer", { connectTimeout: 200, retryStrategy: () => null });
      dead.on("error", () => undefined);
      const r = await replica(stack, { redis: dead });
      try {
        const res = await r.get(`${V}/domains`, a.key);
        expect(res.status).toBe(200);
        expect(res.headers.get("ratelimit-limit")).toBeNull();
        const w = await r.post(`${V}/domains`, a.key, { domain: "unlimited.example.com" });
        expect(w.status).toBe(503);
        expect(await w.json()).toEqual({
          error: "Rate limiter unavailable; the request was not performed, retry shortly",
        });
        expect(w.headers.get("retry-after")).toBe("5");
        expect(await stack.prisma.domain.count({ where: { accountId: a.accountId } })).toBe(0);
      } finally {
        await r.close();
        dead.disconnect();
      }
    });
  });
});
