import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import {
  type ConsoleClient,
  consoleClient,
  createMember,
  type SignInAnswer,
  type Stack,
  signInFrom,
  startStack,
  type TestAccount,
} from "@mailroom/stack";
import { SIGN_IN_FAILURES_PER_IP } from "../src/console/ip-throttle.ts";

/**
 * Sign-in abuse over real HTTP from several loopback addresses (127.0.0.1, .2, .3 are all this
 * machine): the lockout counts per email and client address, so a wrong guess from elsewhere never
 * locks the member out of their own address; an unknown email answers exactly like a member's (same
 * statuses, bodies and headers); X-Forwarded-For is read only from the configured proxy, so a
 * client that reaches the API directly cannot rotate addresses to dodge the throttle; and every
 * answer that carries a secret is `Cache-Control: no-store`.
 */
const PASSWORD = "a long enough password";
/** The only peer whose X-Forwarded-For is believed in this stack. */
const PROXY = "127.0.0.3";
let stack: Stack;
let acct: TestAccount;

type Answer = SignInAnswer;
const signIn = (from: string, email: string, password: string, headers: Record<string, string> = {}) =>
  signInFrom(stack, from, email, password, headers);

/** The headers that say something about the answer (not the date, the request id or the connection). */
const meaningful = (h: http.IncomingHttpHeaders) => {
  const { date: _d, "x-request-id": _r, connection: _c, "keep-alive": _k, ...rest } = h;
  return rest;
};

beforeAll(async () => {
  stack = await startStack({
    services: { ingest: false, ruleEngine: false, dispatcher: false },
    // Behind a proxy (API_TRUST_PROXY), named exactly: only it may say who the client is.
    apiEnv: { API_TRUST_PROXY: "true", API_TRUSTED_PROXIES: PROXY },
  });
  acct = await stack.account();
  await createMember(stack, acct.accountId, "victim@lock.example", PASSWORD);
});
afterAll(async () => {
  await stack?.close();
});

describe("lockout per email and client address", () => {
  it("five wrong guesses from another address lock it there only; the member signs in from theirs", async () => {
    for (let i = 1; i <= 4; i++) expect((await signIn("127.0.0.2", "victim@lock.example", "guess")).status).toBe(401);
    const locked = await signIn("127.0.0.2", "victim@lock.example", "guess");
    expect(locked.status).toBe(429);
    expect(Number(locked.headers["retry-after"])).toBeGreaterThanOrEqual(59);
    // Locked there, even with the right password: guessing cannot go on from that address.
    expect((await signIn("127.0.0.2", "victim@lock.example", PASSWORD)).status).toBe(429);
    // From the member's own address: in.
    expect((await signIn("127.0.0.1", "victim@lock.example", PASSWORD)).status).toBe(201);
  });

  it("an unknown email gets exactly the answers a member's email gets: status, body and headers", async () => {
    const member = await stack.account();
    await createMember(stack, member.accountId, "known@lock.example", PASSWORD);
    const known: Answer[] = [];
    const unknown: Answer[] = [];
    for (let i = 0; i < 5; i++) {
      known.push(await signIn("127.0.0.1", "known@lock.example", "wrong password"));
      unknown.push(await signIn("127.0.0.1", "nobody@lock.example", "wrong password"));
    }
    expect(known.map((a) => a.status)).toEqual([401, 401, 401, 401, 429]);
    expect(unknown.map((a) => a.status)).toEqual(known.map((a) => a.status));
    expect(unknown.map((a) => a.body)).toEqual(known.map((a) => a.body));
    expect(unknown.map((a) => meaningful(a.headers))).toEqual(known.map((a) => meaningful(a.headers)));
    // Then both are locked (the seconds left differ with the moment asked, so only the status is compared).
    expect((await signIn("127.0.0.1", "nobody@lock.example", PASSWORD)).status).toBe(429);
    expect((await signIn("127.0.0.1", "known@lock.example", PASSWORD)).status).toBe(429);
    // Hashes only: neither the typed emails nor the address are stored in clear.
    const rows = await stack.prisma.signInFailure.findMany();
    expect(JSON.stringify(rows)).not.toMatch(/lock\.example|127\.0\.0/);
  });

  it("a password reset lifts the email's locks at every address", async () => {
    await stack.admin("members", "reset-password", "--email", "victim@lock.example");
    expect((await signIn("127.0.0.2", "victim@lock.example", PASSWORD)).status).toBe(201);
  });
});

describe("X-Forwarded-For only from the trusted proxy", () => {
  it("a direct client naming a new address each time is still throttled by its own address", async () => {
    for (let i = 0; i < SIGN_IN_FAILURES_PER_IP; i++) {
      const r = await signIn("127.0.0.4", `spray${i}@lock.example`, "guess", { "x-forwarded-for": `198.51.100.${i}` });
      expect(r.status).toBe(401);
    }
    const refused = await signIn("127.0.0.4", "victim@lock.example", PASSWORD, { "x-forwarded-for": "203.0.113.9" });
    expect(refused.status).toBe(429);
  });

  it("through the trusted proxy, each client is counted by the address the proxy saw", async () => {
    // The proxy passes on what the client claimed, then the client's real address: only the last
    // hop the proxy added is believed.
    for (let i = 0; i < SIGN_IN_FAILURES_PER_IP; i++) {
      const r = await signIn(PROXY, `spray${i}@lock.example`, "guess", { "x-forwarded-for": `10.9.9.${i}, 192.0.2.7` });
      expect(r.status).toBe(401);
    }
    expect((await signIn(PROXY, "victim@lock.example", PASSWORD, { "x-forwarded-for": "192.0.2.7" })).status).toBe(429);
    // Another client behind the same proxy is not affected.
    expect((await signIn(PROXY, "victim@lock.example", PASSWORD, { "x-forwarded-for": "192.0.2.8" })).status).toBe(201);
  });
});

describe("answers that carry a secret are never stored", () => {
  let c: ConsoleClient;
  beforeAll(async () => {
    c = consoleClient(stack);
    expect((await c.signIn("victim@lock.example", PASSWORD)).status).toBe(201);
  });

  it("new API key, endpoint secret at creation and rotation, the console session, MCP", async () => {
    const key = await c.call("POST", "/console/api/api-keys", { name: "ci" });
    expect(key.status).toBe(201);
    expect(key.body.key).toMatch(/^svc_/);
    const ep = await acct.api("POST", "/api/v1/endpoints", { url: "http://127.0.0.1:9/in" });
    expect(ep.status).toBe(201);
    expect(ep.body.secret).toMatch(/^whsec_/);
    const rotated = await acct.api("POST", `/api/v1/endpoints/${ep.body.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const session = await c.call("GET", "/console/api/session");
    const signedIn = await signIn("127.0.0.1", "victim@lock.example", PASSWORD);
    for (const h of [key.headers, ep.headers, rotated.headers, session.headers]) {
      expect(h.get("cache-control")).toBe("no-store");
    }
    expect(signedIn.headers["cache-control"]).toBe("no-store");
    const mcp = await fetch(`${stack.apiUrl}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${acct.key}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(mcp.status).toBe(200);
    expect(mcp.headers.get("cache-control")).toBe("no-store");
  });
});
