import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { http, type Stack, startStack, type TestAccount } from "@mailroom/stack";

/**
 * Issue 12 item 1: a NUL (U+0000, which Postgres text cannot hold) or a lone UTF-16 surrogate (which
 * has no UTF-8 form) anywhere in a request's path, query string or JSON body answers 400 `{error}`
 * on every route, REST and MCP alike, before any handler runs: never a 500, never a partial write.
 */
describe("text Postgres cannot store is refused with 400 on every route", () => {
  let stack: Stack;
  let acct: TestAccount;
  let domainId: string;

  beforeAll(async () => {
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "nul-bytes.com" });
    expect(dom.status).toBe(201);
    domainId = dom.body.id;
  });
  afterAll(async () => {
    await stack?.close();
  });

  /** Everything the account owns, to show a refused request wrote nothing. */
  const owned = async () => {
    const where = { accountId: acct.accountId };
    const p = stack.prisma;
    return {
      domains: await p.domain.count({ where }),
      addresses: await p.address.count({ where }),
      endpoints: await p.endpoint.count({ where }),
      rules: await p.shieldRule.count({ where }),
      emails: await p.email.count({ where }),
    };
  };

  const send = (method: string, path: string, body?: string) =>
    http(stack, method, path, {
      key: acct.key,
      ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } }),
    });

  const expectRefused = (res: { status: number; body: unknown }, where: RegExp) => {
    expect({ status: res.status, body: res.body }).toEqual({
      status: 400,
      body: { error: expect.stringMatching(where) },
    });
  };

  it.each([
    ["a query string", "GET", "/api/v1/emails?q=%00", /^q: /],
    ["a query string (list filter)", "GET", "/api/v1/emails?from=a%00b@x.example", /^from: /],
    ["a path parameter", "GET", "/api/v1/endpoints/ep_%00", /^path: /],
    ["a path parameter of a write", "DELETE", "/api/v1/domains/dm_x%00y", /^path: /],
    ["a path parameter that is not UTF-8", "GET", "/api/v1/emails/em_%ED%A0%80", /^path: /],
  ])("in %s (%s %s)", async (_what, method, path, where) => {
    const before = await owned();
    expectRefused(await send(method, path), where);
    expect(await owned()).toEqual(before);
  });

  it.each([
    ["POST /domains, a NUL in the name", "POST", "/api/v1/domains", '{"domain":"a\\u0000b.example"}', /^domain: /],
    [
      "POST /addresses, a NUL in the local part",
      "POST",
      "/api/v1/addresses",
      () => JSON.stringify({ domainId, localPart: "in\u0000fo" }),
      /^localPart: /,
    ],
    [
      "POST /shield-rules, a NUL deep in a condition",
      "POST",
      "/api/v1/shield-rules",
      () =>
        JSON.stringify({
          name: "r",
          action: "block",
          conditions: [{ field: "subject", operator: "contains", value: "a\u0000" }],
        }),
      /^conditions\.0\.value: /,
    ],
    [
      "POST /shield-rules, a lone surrogate in the name",
      "POST",
      "/api/v1/shield-rules",
      '{"name":"r\\ud800","action":"block","conditions":[{"field":"subject","operator":"contains","value":"x"}]}',
      /^name: /,
    ],
    [
      "POST /endpoints, a NUL in an object key",
      "POST",
      "/api/v1/endpoints",
      '{"url":"http://x.example","headers":{"X-A\\u0000":"1"}}',
      /^headers: /,
    ],
    [
      "POST /emails (send), a NUL in the text body",
      "POST",
      "/api/v1/emails",
      '{"from":"a@nul-bytes.com","to":["b@c.example"],"subject":"s","text":"x\\u0000"}',
      /^text: /,
    ],
  ])("in a JSON body: %s", async (_what, method, path, body, where) => {
    const before = await owned();
    expectRefused(await send(method, path, typeof body === "function" ? body() : body), where);
    expect(await owned()).toEqual(before);
  });

  it("in a PATCH body, the resource is left unchanged", async () => {
    const ep = await acct.api("POST", "/api/v1/endpoints", { url: "http://127.0.0.1:9/hook", name: "before" });
    expect(ep.status).toBe(201);
    expectRefused(await send("PATCH", `/api/v1/endpoints/${ep.body.id}`, '{"name":"aft\\u0000er"}'), /^name: /);
    expect((await acct.api("GET", `/api/v1/endpoints/${ep.body.id}`)).body.name).toBe("before");
  });

  it("in an MCP tool argument", async () => {
    const before = await owned();
    const call = (args: Record<string, unknown>) =>
      http(stack, "POST", "/mcp", {
        key: acct.key,
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "create_inbox", arguments: args },
        }),
      });
    expectRefused(await call({ domainId, localPart: "in\u0000box" }), /^params\.arguments\.localPart: /);
    expect(await owned()).toEqual(before);
    // The same call without the NUL is served (so the refusal above is about the byte, not the call).
    const okCall = await call({ domainId, localPart: "inbox" });
    expect(okCall.status).toBe(200);
    expect((await owned()).addresses).toBe(before.addresses + 1);
  });

  it("clean text, including other control characters and astral symbols, still passes", async () => {
    const res = await acct.api("POST", "/api/v1/shield-rules", {
      name: "tab\tand 🦆",
      action: "block",
      conditions: [{ field: "subject", operator: "contains", value: "\u0001x" }],
    });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe("tab\tand 🦆");
    expect((await acct.api("GET", "/api/v1/emails?q=%F0%9F%A6%86")).status).toBe(200);
    // Bytes that are not UTF-8 in a query string are decoded as U+FFFD (node:querystring), which
    // Postgres stores: an ordinary search, not an error.
    expect((await acct.api("GET", "/api/v1/emails?q=%ED%A0%80%FF")).status).toBe(200);
  });
});
