import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import nodemailer from "nodemailer";

/**
 * Bulk replay (issue 15): mail arrives over SMTP, the dispatcher's attempts fail against a real
 * receiver until the deliveries are dead, then `POST /deliveries/retry` (and the MCP tool
 * `retry_deliveries`, same service function) re-opens every match and the dispatcher delivers them.
 */
let stack: Stack;
let receiver: Receiver;
let acct: TestAccount;
let other: TestAccount;
let mcp: Client;
const domain = "replay-example.com";
let domainId: string;
let up = false;

beforeAll(async () => {
  stack = await startStack({ backoffUnitMs: 20 });
  receiver = await startReceiver();
  receiver.respond(() => (up ? { status: 200, body: "ok" } : { status: 503, body: "down" }));
  acct = await stack.account();
  other = await stack.account();
  const dom = await acct.api("POST", "/api/v1/domains", { domain });
  expect(dom.status).toBe(201);
  domainId = dom.body.id;
  await stack.admin("domains", "verify", "--domain", domain, "--force");
  mcp = new Client({ name: "replay-test", version: "1.0.0" });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${acct.key}` } },
    }),
  );
});
afterAll(async () => {
  await mcp?.close().catch(() => undefined);
  await receiver?.close();
  await stack?.close();
});

async function routedEndpoint(localPart: string) {
  const ep = await acct.api("POST", "/api/v1/endpoints", { url: `${receiver.url}/${localPart}`, maxAttempts: 1 });
  expect(ep.status).toBe(201);
  const addr = await acct.api("POST", "/api/v1/addresses", { domainId, localPart, endpointId: ep.body.id });
  expect(addr.status).toBe(201);
  return ep.body.id as string;
}

async function mail(to: string, n: number) {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true });
  for (let i = 0; i < n; i++) await transport.sendMail({ from: "a@sender.example", to, subject: `m${i}`, text: "x\n" });
  transport.close();
}

const deliveries = async (endpointId: string, status: string) =>
  (await acct.api("GET", `/api/v1/deliveries?endpointId=${endpointId}&status=${status}`)).body.data as {
    id: string;
    attemptCount: number;
    maxAttempts: number;
    createdAt: string;
  }[];

const settle = (endpointId: string, status: string, n: number) =>
  waitFor(async () => ((await deliveries(endpointId, status)).length === n ? deliveries(endpointId, status) : null), {
    what: `${n} ${status} deliveries of ${endpointId}`,
    timeoutMs: 30_000,
  });

const retry = (body: unknown, who = acct) => who.api("POST", "/api/v1/deliveries/retry", body);

describe("POST /deliveries/retry", () => {
  let a: string;
  let b: string;
  let deadA: Awaited<ReturnType<typeof deliveries>>;

  beforeAll(async () => {
    [a, b] = [await routedEndpoint("alpha"), await routedEndpoint("beta")];
    await mail(`alpha@${domain}`, 3);
    await mail(`beta@${domain}`, 1);
    deadA = await settle(a, "dead", 3);
    await settle(b, "dead", 1);
  });

  it("refuses bad filters with 400 and changes nothing", async () => {
    const cases: [unknown, RegExp][] = [
      [{ status: "delivered" }, /status: must be dead/],
      [{ since: "yesterday" }, /since: must be an ISO 8601 timestamp/],
      [{ endpointId: "dom_x" }, /endpointId: must be an id starting with ep_/],
      [{ since: "2026-02-01T00:00:00Z", until: "2026-01-01T00:00:00Z" }, /since: must not be after until/],
      [{ endpoint: a }, /endpoint/],
    ];
    for (const [body, message] of cases) {
      const r = await retry(body);
      expect([body, r.status]).toEqual([body, 400]);
      expect(r.body.error).toMatch(message);
    }
    expect(await deliveries(a, "dead")).toHaveLength(3);
  });

  it("a window that matches nothing, or another account, replays nothing", async () => {
    const first = deadA.map((d) => d.createdAt).sort()[0]!;
    const before = new Date(new Date(first).getTime() - 1).toISOString();
    expect((await retry({ endpointId: a, until: before })).body).toEqual({ retried: 0 });
    expect((await retry({ endpointId: a, since: new Date(Date.now() + 60_000).toISOString() })).body).toEqual({
      retried: 0,
    });
    expect((await retry({ endpointId: a }, other)).body).toEqual({ retried: 0 });
    expect(await deliveries(a, "dead")).toHaveLength(3);
  });

  it("re-opens every dead match with a fresh budget, returns how many, and a second call replays none", async () => {
    up = true;
    const [first, second] = [await retry({ endpointId: a, status: "dead" }), await retry({ endpointId: a })];
    expect([first.status, first.body]).toEqual([200, { retried: 3 }]);
    expect([second.status, second.body]).toEqual([200, { retried: 0 }]);
    const delivered = await settle(a, "delivered", 3);
    expect(delivered.map((d) => d.id).sort()).toEqual(deadA.map((d) => d.id).sort());
    for (const d of delivered) expect([d.attemptCount, d.maxAttempts]).toEqual([2, 2]);
    // The same delivery ids went out again; the other endpoint's dead delivery was left alone.
    const ids = receiver.requests.filter((r) => r.path === "/alpha").map((r) => r.headers["x-service-delivery-id"]);
    for (const d of deadA) expect(ids.filter((id) => id === d.id)).toHaveLength(2);
    expect(await deliveries(b, "dead")).toHaveLength(1);
    expect((await retry({ endpointId: a })).body).toEqual({ retried: 0 });
  });

  it("the MCP tool retry_deliveries is the same operation", async () => {
    const call = async (args: Record<string, unknown>) =>
      (await mcp.callTool({ name: "retry_deliveries", arguments: args })) as {
        isError?: boolean;
        structuredContent?: unknown;
        content: { text?: string }[];
      };
    const bad = await call({ status: "retrying" });
    expect(bad.isError).toBe(true);
    expect(bad.content[0]?.text).toMatch(/must be dead/);
    expect((await call({ endpointId: b })).structuredContent).toEqual({ retried: 1 });
    expect((await call({ endpointId: b })).structuredContent).toEqual({ retried: 0 });
    await settle(b, "delivered", 1);
  });
});
