import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Fixture, Stack, TestAccount } from "@mailroom/stack";
import { concrete, http, seedEverything, startStack } from "@mailroom/stack";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { openApiPath } from "../src/lib/openapi.ts";
import { type RegisteredRoute, registeredRoutes } from "../src/lib/route.ts";
import { timestamp } from "../src/lib/schemas.ts";

/** GET /events streams until the client leaves: e2e/events-sse.test.ts reads it; the loops here skip it. */
const isEventStream = (r: RegisteredRoute) => r.doc?.responses[200]?.contentType === "text/event-stream";

const V = "/api/v1";

/** Requests that succeed, for the write routes this file exercises (the others are checked statically). */
const WRITES: Record<string, (f: Fixture) => unknown> = {
  "POST /domains": () => ({ domain: "openapi-new.example.com" }),
  "PATCH /domains/:id": (f) => ({ catchAll: { enabled: true, endpointId: f.endpointId } }),
  "POST /addresses": (f) => ({ domainId: f.domainId, localPart: "oa", endpointId: f.endpointId }),
  "PATCH /addresses/:id": () => ({ active: false }),
  "POST /endpoints": () => ({ url: "http://127.0.0.1:9/new", headers: { "X-A": "1" } }),
  "PATCH /endpoints/:id": () => ({ name: "renamed" }),
  "POST /endpoints/:id/test": () => undefined,
  "POST /endpoints/:id/rotate-secret": () => undefined,
  "POST /deliveries/:id/retry": () => undefined,
  "POST /shield-rules": (f) => ({
    name: "oa",
    action: "route",
    conditions: [{ field: "has_attachment", operator: "is_true" }],
    endpointIds: [f.endpointId],
    domainId: f.domainId,
  }),
  "PATCH /shield-rules/:id": () => ({ enabled: false }),
  "POST /shield-rules/test": () => ({ from: "a@sender.example", to: "info@openapi.example.com", subject: "x" }),
};

describe("OpenAPI 3.1 document", () => {
  let stack: Stack;
  let acct: TestAccount;
  let f: Fixture;
  let doc: any;
  let routes: RegisteredRoute[];

  beforeAll(async () => {
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
    f = await seedEverything(stack, acct, "openapi.example.com");
    const r = await http(stack, "GET", `${V}/openapi.json`); // public: no key
    expect(r.status).toBe(200);
    doc = r.body;
    routes = registeredRoutes(stack.app).filter((x) => x.path.startsWith(`${V}/`));
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("validates as OpenAPI 3.1", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const v = new Validator();
    const res = await v.validate(structuredClone(doc));
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
    expect(v.version).toBe("3.1");
  });

  it("documents every route the app registers (its route tables), and nothing else", () => {
    expect(routes.length).toBeGreaterThanOrEqual(22);
    const undocumented = routes.filter((r) => !r.doc).map((r) => `${r.method} ${r.path}`);
    expect(undocumented).toEqual([]);
    const missing = routes.filter((r) => !doc.paths[openApiPath(r.path)]?.[r.method.toLowerCase()]);
    expect(missing.map((r) => `${r.method} ${r.path}`)).toEqual([]);
    const registered = new Set(routes.map((r) => `${r.method.toLowerCase()} ${openApiPath(r.path)}`));
    const extra = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops as object)
        .map((m) => `${m} ${p}`)
        .filter((k) => !registered.has(k)),
    );
    expect(extra).toEqual([]);
    // The request schemas are the validators' own: e.g. the page size rule.
    const limit = doc.paths["/api/v1/emails"].get.parameters.find((p: any) => p.name === "limit");
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 50 });
    expect(doc.paths["/api/v1/addresses"].post.requestBody.content["application/json"].schema.required).toEqual([
      "domainId",
      "localPart",
    ]);
  });

  it("every documented response shape matches what the route returns", async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const checked: string[] = [];
    const check = (route: RegisteredRoute, res: Awaited<ReturnType<typeof http>>) => {
      const op = doc.paths[openApiPath(route.path)][route.method.toLowerCase()];
      const documented = op.responses[String(res.status)];
      expect([route.method, route.path, res.status, documented ? "documented" : "undocumented status"]).toEqual([
        route.method,
        route.path,
        res.status,
        "documented",
      ]);
      const content = documented.content ?? {};
      const type = Object.keys(content)[0];
      if (!type) {
        expect([route.path, res.bytes.length]).toEqual([route.path, 0]);
        return;
      }
      // Attachments are served with their own type; everything else with the documented one.
      if (type !== "application/octet-stream") expect(res.headers.get("content-type")?.split(";")[0]).toBe(type);
      if (type !== "application/json") return;
      // Refs point into the document (#/components/…): compile with the components alongside.
      const validate = ajv.compile({ ...content[type].schema, components: doc.components });
      const ok = validate(res.body);
      expect([route.method, route.path, ok ? [] : validate.errors]).toEqual([route.method, route.path, []]);
      // The zod schema the document came from agrees.
      const zod = route.doc?.responses[res.status]?.schema;
      if (zod) expect([route.path, zod.safeParse(res.body).error?.issues ?? []]).toEqual([route.path, []]);
      checked.push(`${route.method} ${route.path} ${res.status}`);
    };

    for (const route of routes.filter((r) => r.method === "GET" && !isEventStream(r))) {
      const res = await http(stack, "GET", concrete(route.path, f), { key: acct.key });
      expect([route.path, res.status]).toEqual([route.path, 200]);
      check(route, res);
    }
    for (const route of routes) {
      const body = WRITES[`${route.method} ${route.path.replace(V, "")}`];
      if (!body) continue;
      const json = body(f);
      const res = await http(stack, route.method, concrete(route.path, f), {
        key: acct.key,
        ...(json === undefined ? {} : { body: JSON.stringify(json), headers: { "content-type": "application/json" } }),
      });
      check(route, res);
    }
    // Error bodies match the Error component.
    const err = await http(stack, "GET", `${V}/domains/dom_missing0000000000000`, { key: acct.key });
    check(routes.find((r) => r.method === "GET" && r.path === `${V}/domains/:id`)!, err);
    const deleted = await http(stack, "DELETE", `${V}/addresses/${f.addressId}`, { key: acct.key });
    check(routes.find((r) => r.method === "DELETE" && r.path === `${V}/addresses/:id`)!, deleted);
    expect(checked.length).toBeGreaterThanOrEqual(26);
  });

  it("a schema mismatch is caught (the check can fail)", () => {
    const route = routes.find((r) => r.method === "GET" && r.path === `${V}/domains/:id`)!;
    const zod = route.doc!.responses[200]!.schema!;
    expect(zod.safeParse({ id: "dom_x", unexpected: true }).success).toBe(false);
    // Timestamps must be UTC with exactly three fractional digits (spec §2), not just any ISO 8601.
    expect(timestamp.safeParse("2026-01-31T12:00:00.000Z").success).toBe(true);
    for (const bad of ["2026-01-31T12:00:00Z", "2026-01-31T12:00:00.0Z", "2026-01-31T12:00:00.000+01:00"]) {
      expect([bad, timestamp.safeParse(bad).success]).toEqual([bad, false]);
    }
  });
});
