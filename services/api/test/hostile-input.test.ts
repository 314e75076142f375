import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import {
  type ConsoleClient,
  consoleClient,
  createMember,
  type Stack,
  startStack,
  type TestAccount,
} from "@mailroom/stack";
import { seedEmail } from "@mailroom/testing";
import { MAX_RENDERED_HTML } from "../src/console/mail-html.ts";
import { MAX_JSON_DEPTH } from "../src/lib/json-body.ts";

/**
 * Malformed and hostile input on every interface, over real HTTP: deeply nested JSON is refused
 * with 400 before it is parsed (REST, MCP, the console's anonymous and signed-in routes), the
 * console checks the session before it reads a body, and a bad cookie, a missing asset and an
 * unknown console API path answer 4xx (JSON where the caller expects JSON), never 500 or the app.
 */
const PASSWORD = "a long enough password";
let stack: Stack;
let acct: TestAccount;
let member: ConsoleClient;

beforeAll(async () => {
  stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
  acct = await stack.account();
  await createMember(stack, acct.accountId, "owner@hostile.example", PASSWORD);
  member = consoleClient(stack);
  expect((await member.signIn("owner@hostile.example", PASSWORD)).status).toBe(201);
});
afterAll(async () => {
  await stack?.close();
});

/** `[[[…]]]` `depth` deep: 10,000 deep is 20 KB. */
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
/** An object body whose one field nests `depth` deep, so it passes the parser's first-character check. */
const nestedField = (depth: number) => `{"name":${nested(depth)}}`;

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.apiUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, text, type: res.headers.get("content-type") ?? "" };
}

const deepError = { error: `body: JSON nests deeper than ${MAX_JSON_DEPTH} levels` };

describe("deeply nested JSON", () => {
  it("REST: a 20 KB body 10,000 deep answers 400 naming the limit; nothing is created", async () => {
    const auth = { authorization: `Bearer ${acct.key}` };
    for (const body of [nested(10_000), nestedField(10_000), nestedField(MAX_JSON_DEPTH + 1)]) {
      const r = await post("/api/v1/domains", body, auth);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text)).toEqual(deepError);
    }
    expect(await stack.prisma.domain.count({ where: { accountId: acct.accountId } })).toBe(0);
    // Exactly at the limit is parsed and judged on its content (a 400 naming the field).
    const ok = await post("/api/v1/domains", nestedField(MAX_JSON_DEPTH - 1), auth);
    expect(ok.status).toBe(400);
    expect(JSON.parse(ok.text).error).not.toContain("nests deeper");
  });

  it("brackets inside strings do not count", async () => {
    const r = await post("/api/v1/domains", JSON.stringify({ domain: `${"[{".repeat(5000)}\\"` }), {
      authorization: `Bearer ${acct.key}`,
    });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error).toMatch(/^domain: /);
  });

  it("MCP: a deep JSON-RPC call answers 400", async () => {
    const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_domains","arguments":${nested(10_000)}}}`;
    const r = await post("/mcp", call, {
      authorization: `Bearer ${acct.key}`,
      accept: "application/json, text/event-stream",
    });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toEqual(deepError);
  });

  it("console: without a session a body is never read (401, even when it is deep or not JSON)", async () => {
    for (const body of [nested(10_000), "{not json", nestedField(MAX_JSON_DEPTH + 1)]) {
      const r = await post("/console/api/domains", body);
      expect(r.status).toBe(401);
      expect(JSON.parse(r.text)).toEqual({ error: "Not signed in" });
    }
  });

  it("console: signed in, a deep body answers 400; sign-in and set-password refuse one too", async () => {
    const r = await member.call("POST", "/console/api/domains", nestedField(10_000));
    expect(r.status).toBe(400);
    expect(r.body).toEqual(deepError);
    for (const path of ["/console/api/session", "/console/api/password"]) {
      const anon = await post(path, nestedField(1000));
      expect(anon.status).toBe(400);
      expect(JSON.parse(anon.text)).toEqual(deepError);
      // Without a session, no more than a sign-in's worth of bytes is read.
      expect((await post(path, JSON.stringify({ email: "x".repeat(20_000) }))).status).toBe(413);
    }
  });
});

describe("bad input elsewhere answers 4xx", () => {
  it("a malformed session cookie is 401, not 500", async () => {
    for (const cookie of ["mailroom_console=%", "mailroom_console=%E0%A4%A", "mailroom_console=%%%"]) {
      const res = await fetch(`${stack.apiUrl}/console/api/session`, { headers: { cookie } });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: "Not signed in" });
    }
  });

  it("a missing console asset is 404, not 500 (and not the app)", async () => {
    for (const path of ["/console/assets/nope.js", "/console/assets/", "/console/assets/deep/nope.css"]) {
      const res = await fetch(`${stack.apiUrl}${path}`);
      expect(res.status).toBe(404);
      expect(await res.text()).toMatch(/^No console asset \//);
    }
  });

  it("an unknown /console/api path answers a JSON 404, signed in or not", async () => {
    for (const path of ["/console/api/nope", "/console/api/emails/em_x/nope", "/console/api/"]) {
      const signedIn = await member.call("GET", path);
      expect(signedIn.status).toBe(404);
      expect(signedIn.headers.get("content-type")).toMatch(/^application\/json/);
      expect(signedIn.body.error).toMatch(/^No route for GET /);
      const anonymous = await fetch(`${stack.apiUrl}${path}`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("content-type")).toMatch(/^application\/json/);
    }
  });
});

describe("the message view's HTML frame", () => {
  it("is the member's own mail only; a part too large to sanitize is not shown, never served raw", async () => {
    const { id } = await seedEmail(stack.prisma, acct.accountId);
    const huge = `<p>${"x".repeat(MAX_RENDERED_HTML)}</p><iframe src="http://x.example/"></iframe>`;
    await stack.prisma.email.update({ where: { id }, data: { htmlBody: huge } });
    const res = await fetch(`${stack.apiUrl}/console/api/emails/${id}/html`, {
      headers: { cookie: member.cookie ?? "" },
    });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain("too large to show here");
    expect(body).not.toContain("<iframe");
    expect(res.headers.get("content-security-policy")).toMatch(/^sandbox; default-src 'none'/);

    const other = await stack.account();
    const theirs = await seedEmail(stack.prisma, other.accountId);
    expect((await member.call("GET", `/console/api/emails/${theirs.id}/html`)).status).toBe(404);
    expect((await fetch(`${stack.apiUrl}/console/api/emails/${id}/html`)).status).toBe(401);
  });
});
