import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import express, { Router } from "express";
import { z } from "zod";
import type { OpsContext } from "../ops/context.ts";
import { errorHandler } from "./http.ts";
import { allowedMethods, mountRoutes, type Route, route, servedAt } from "./route.ts";

/**
 * A route's schemas are checked before its handler runs: a real express app on loopback with two
 * routes that record every call. Whatever fails validation never reaches the handler.
 */
const calls: unknown[] = [];
const routes: Route[] = [
  route({
    method: "POST",
    path: "/things/:id",
    doc: {
      tag: "T",
      summary: "s",
      params: z.object({ id: z.string().regex(/^t_/, "must start with t_") }),
      query: z.object({ limit: z.coerce.number().int().max(10, "must be at most 10").default(5) }).strict(),
      body: z.object({ items: z.array(z.object({ n: z.number({ error: "must be a number" }) })) }).strict(),
      responses: { 201: { description: "created" } },
    },
    handle: (_ctx, { account, params, query, body }) => {
      calls.push({ account, id: params.id, limit: query.limit, body });
      return { ok: true };
    },
  }),
  route({
    method: "PATCH",
    path: "/rules/:id",
    messages: "rules",
    doc: {
      tag: "T",
      summary: "s",
      body: z.object({ ids: z.array(z.string({ error: "must be a string" })) }).strict(),
      responses: { 200: { description: "ok" } },
    },
    handle: () => {
      calls.push("rules");
      return { ok: true };
    },
  }),
  route({
    method: "PATCH",
    path: "/things/:id",
    bodyCheckedBy: "operation",
    doc: { tag: "T", summary: "s", body: z.object({ never: z.string() }), responses: { 200: { description: "ok" } } },
    handle: () => {
      calls.push("operation");
      return { ok: true };
    },
  }),
  route({
    method: "DELETE",
    path: "/things/:id",
    doc: { tag: "T", summary: "s", responses: { 204: { description: "deleted" } } },
    handle: (_ctx, { account }) => {
      calls.push(`deleted by ${account}`);
      return { ignored: true };
    },
  }),
  route({
    method: "GET",
    path: "/things/:id",
    sends: "itself",
    doc: { tag: "T", summary: "s", responses: { 200: { description: "bytes", contentType: "text/plain" } } },
    handle: (_ctx, { res }) => {
      calls.push("itself");
      res.type("text/plain").send("raw");
    },
  }),
];

let server: Server;
let base: string;
beforeAll(async () => {
  const app = express();
  app.use(express.json(), (req, _res, next) => {
    req.auth = { accountId: "acc_1" } as typeof req.auth;
    next();
  });
  app.use(mountRoutes(Router(), {} as OpsContext, routes), errorHandler(createLogger("t", "silent")));
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

async function send(method: string, path: string, body: unknown) {
  calls.length = 0;
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text && res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text,
    calls: [...calls],
  };
}

describe("routes declared as data", () => {
  it("hand the handler the account and the validated params, query and body; answer with the declared status", async () => {
    expect(await send("POST", "/things/t_1?limit=3", { items: [{ n: 1 }] })).toEqual({
      status: 201,
      body: { ok: true },
      calls: [{ account: "acc_1", id: "t_1", limit: 3, body: { items: [{ n: 1 }] } }],
    });
    expect((await send("POST", "/things/t_1", { items: [] })).calls).toEqual([
      { account: "acc_1", id: "t_1", limit: 5, body: { items: [] } },
    ]);
  });

  it("send a 204 without a body, and leave the response to a handler that sends it itself", async () => {
    expect(await send("DELETE", "/things/t_1", undefined)).toEqual({
      status: 204,
      body: "",
      calls: ["deleted by acc_1"],
    });
    expect(await send("GET", "/things/t_1", undefined)).toEqual({ status: 200, body: "raw", calls: ["itself"] });
  });

  it.each([
    ["path", "/things/x_1", { items: [] }, "id: must start with t_"],
    ["query", "/things/t_1?limit=11", { items: [] }, "limit: must be at most 10"],
    ["unknown query key", "/things/t_1?sort=x", { items: [] }, 'query: Unrecognized key: "sort"'],
    ["body", "/things/t_1", { items: [{ n: "1" }] }, "items.0.n: must be a number"],
    ["unknown body key", "/things/t_1", { items: [], x: 1 }, 'body: Unrecognized key: "x"'],
  ])("refuse a bad %s with 400 before the handler runs", async (_what, path, body, error) => {
    expect(await send("POST", path, body)).toEqual({ status: 400, body: { error }, calls: [] });
  });

  it("word shield-rule bodies as core does, and leave a body to the operation when the route says so", async () => {
    expect(await send("PATCH", "/rules/r_1", { ids: [1] })).toEqual({
      status: 400,
      body: { error: "ids[0]: must be a string" },
      calls: [],
    });
    expect((await send("PATCH", "/rules/r_1", { ids: ["a"], y: 1 })).body).toEqual({
      error: 'y: Unrecognized key: "y"',
    });
    expect(await send("PATCH", "/things/t_1", { other: 1 })).toMatchObject({ status: 200, calls: ["operation"] });
  });

  it("list what is served under a prefix, and the methods each path allows (HEAD with GET)", () => {
    const served = servedAt("/api/v1", [{ method: "GET", path: "/things/:id" }, ...routes]);
    expect(served.map((r) => `${r.method} ${r.path} ${r.doc ? "doc" : "-"}`)).toEqual([
      "GET /api/v1/things/:id -",
      "POST /api/v1/things/:id doc",
      "PATCH /api/v1/rules/:id doc",
      "PATCH /api/v1/things/:id doc",
      "DELETE /api/v1/things/:id doc",
      "GET /api/v1/things/:id doc",
    ]);
    expect(allowedMethods(served, "/api/v1/things/t_9")).toEqual(["DELETE", "GET", "HEAD", "PATCH", "POST"]);
    expect(allowedMethods(served, "/api/v1/things/t_9/")).toEqual(["DELETE", "GET", "HEAD", "PATCH", "POST"]);
    expect(allowedMethods(served, "/api/v1/things")).toEqual([]);
  });
});
