import dns from "node:dns";
import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { type DnsServer, type Receiver, startDnsServer, startReceiver } from "@mailroom/testing";
import { type ConnectionPool, createConnectionPool } from "./pool.ts";
import { guardedRequest, MAX_RESPONSE_BODY_BYTES } from "./request.ts";

let receiver: Receiver;
let other: Receiver;
let dnsServer: DnsServer;
const resolver = new dns.promises.Resolver({ timeout: 1_000, tries: 1 });

beforeAll(async () => {
  [receiver, other, dnsServer] = await Promise.all([startReceiver(), startReceiver(), startDnsServer()]);
  resolver.setServers([dnsServer.server]);
});
afterAll(() => Promise.all([receiver.close(), other.close(), dnsServer.close()]));
beforeEach(() => {
  receiver.requests.length = 0;
  other.requests.length = 0;
  receiver.respond(() => ({ status: 200, body: "ok" }));
});

const port = () => new URL(receiver.url).port;
let pool: ConnectionPool | undefined;
const post = (url: string, extra: { allowPrivate?: boolean; timeoutMs?: number } = {}) =>
  guardedRequest({
    url,
    body: '{"hello":"world"}',
    headers: { "x-service-event": "email.received" },
    timeoutMs: extra.timeoutMs ?? 2_000,
    resolver,
    allowPrivate: extra.allowPrivate ?? false,
    ...(pool ? { pool } : {}),
  });

// Every behaviour holds with fresh connections and with the keep-alive pool the dispatcher uses.
describe.each([
  ["fresh connections", false],
  ["keep-alive pool", true],
])("guardedRequest (%s)", (_, pooled) => {
  beforeAll(() => {
    pool = pooled ? createConnectionPool() : undefined;
  });
  afterAll(() => {
    pool?.close();
    pool = undefined;
  });

  it("POSTs the body and headers and reports status, body and duration", async () => {
    receiver.respond(() => ({ status: 202, body: "accepted" }));
    const res = await post(`${receiver.url}/hook?x=1`, { allowPrivate: true });
    expect(res).toMatchObject({ status: 202, body: "accepted", error: null });
    expect(res.durationMs).toBeGreaterThanOrEqual(0);
    const [req] = receiver.requests;
    expect(req?.method).toBe("POST");
    expect(req?.path).toBe("/hook?x=1");
    expect(req?.body.toString()).toBe('{"hello":"world"}');
    expect(req?.headers["x-service-event"]).toBe("email.received");
    expect(req?.headers["content-type"]).toBe("application/json");
  });

  it("returns non-2xx statuses as responses, not errors", async () => {
    receiver.respond(() => ({ status: 500, body: "boom" }));
    expect(await post(receiver.url, { allowPrivate: true })).toMatchObject({ status: 500, body: "boom", error: null });
  });

  it("keeps only the first 4096 bytes of the body, without a broken character at the cut", async () => {
    receiver.respond(() => ({ status: 200, body: "x".repeat(100_000) }));
    const big = await post(receiver.url, { allowPrivate: true });
    expect(big.body).toBe("x".repeat(MAX_RESPONSE_BODY_BYTES));
    receiver.respond(() => ({ status: 200, body: `a${"é".repeat(5000)}` })); // 2-byte chars, odd offset
    const multibyte = await post(receiver.url, { allowPrivate: true });
    expect(Buffer.byteLength(multibyte.body)).toBeLessThanOrEqual(MAX_RESPONSE_BODY_BYTES);
    expect(multibyte.body).toBe(`a${"é".repeat(2047)}`);
  });

  it("never follows a redirect: the 3xx is the result and the target gets nothing", async () => {
    receiver.respond(() => ({ status: 301, body: "moved", headers: { location: `${other.url}/elsewhere` } }));
    const res = await post(receiver.url, { allowPrivate: true });
    expect(res).toMatchObject({ status: 301, error: null });
    expect(receiver.requests).toHaveLength(1);
    expect(other.requests).toHaveLength(0);
  });

  it("gives up after the timeout with error 'timeout'", async () => {
    receiver.respond(() => ({ status: 200, delayMs: 1_200 }));
    const res = await post(receiver.url, { allowPrivate: true, timeoutMs: 300 });
    expect(res).toMatchObject({ status: null, error: "timeout" });
    expect(res.durationMs).toBeGreaterThanOrEqual(250);
    expect(res.durationMs).toBeLessThan(2_000);
  });

  it("reports a refused connection as 'unreachable: ECONNREFUSED'", async () => {
    const closedPort = await freePort();
    const res = await post(`http://127.0.0.1:${closedPort}/`, { allowPrivate: true });
    expect(res).toEqual({ status: null, body: "", durationMs: expect.any(Number), error: "unreachable: ECONNREFUSED" });
  });

  it("reports an unknown host as unreachable", async () => {
    expect(await post("http://nowhere.test/")).toMatchObject({ status: null, error: "unreachable: ENOTFOUND" });
  });

  it.each([
    "127.0.0.1",
    "[::1]",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "[::ffff:127.0.0.1]",
    "[fc00::1]",
    "2130706433", // 127.0.0.1 in decimal
  ])("refuses %s without connecting", async (host) => {
    const res = await post(`http://${host}:${port()}/`);
    expect(res.status).toBeNull();
    expect(res.error).toMatch(/^non-public URL: /);
    expect(receiver.requests).toHaveLength(0);
  });

  it("refuses a host name that resolves to a private address (real DNS), and reaches it only when allowed", async () => {
    dnsServer.set("hooks.internal.test", "A", ["127.0.0.1"]);
    const url = `http://hooks.internal.test:${port()}/hook`;
    const refused = await post(url);
    expect(refused.error).toBe(
      "non-public URL: hooks.internal.test resolves to 127.0.0.1: loopback address (127.0.0.0/8)",
    );
    expect(receiver.requests).toHaveLength(0);

    // Same URL with the guard relaxed: the connection goes to the resolved address, looked up once.
    const before = dnsServer.queries.filter((q) => q.name === "hooks.internal.test" && q.type === "A").length;
    expect(await post(url, { allowPrivate: true })).toMatchObject({ status: 200, error: null });
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]?.headers.host).toBe(`hooks.internal.test:${port()}`);
    const after = dnsServer.queries.filter((q) => q.name === "hooks.internal.test" && q.type === "A").length;
    expect(after - before).toBe(1);
  });

  it("refuses a host when any one of its addresses is private", async () => {
    dnsServer.set("mixed.test", "A", ["8.8.8.8"]);
    dnsServer.set("mixed.test", "AAAA", ["fd00::1"]);
    expect((await post("http://mixed.test/")).error).toBe(
      "non-public URL: mixed.test resolves to fd00::1: unique-local address (fc00::/7)",
    );
  });

  it("refuses localhost names without asking DNS", async () => {
    const before = dnsServer.queries.length;
    expect((await post(`http://localhost:${port()}/`)).error).toMatch(/^non-public URL: /);
    expect(dnsServer.queries.length).toBe(before);
    expect(receiver.requests).toHaveLength(0);
  });

  it("maps a malformed URL to unreachable instead of throwing", async () => {
    expect(await post("not a url")).toMatchObject({ status: null, error: "unreachable: ERR_INVALID_URL" });
  });
});

describe("keep-alive pool", () => {
  const servers: http.Server[] = [];
  /** A server on `host` that counts its connections and names itself in the body. */
  const serve = async (host: string, port = 0) => {
    const server = http.createServer((req, res) => req.resume().on("end", () => res.end(host)));
    const stats = { connections: 0 };
    server.on("connection", () => stats.connections++);
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    servers.push(server);
    return { port: (server.address() as net.AddressInfo).port, stats };
  };
  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });
  const send = (p: ConnectionPool, url: string, allowPrivate = true) =>
    guardedRequest({ url, body: "{}", timeoutMs: 2_000, resolver, allowPrivate, pool: p });

  it("reuses one connection for consecutive requests to the same checked address", async () => {
    const p = createConnectionPool();
    try {
      const a = await serve("127.0.0.1");
      for (let i = 0; i < 5; i++) {
        expect(await send(p, `http://127.0.0.1:${a.port}/`)).toMatchObject({ status: 200, body: "127.0.0.1" });
      }
      expect(a.stats.connections).toBe(1);
    } finally {
      p.close();
    }
  });

  it("a host whose DNS answer changed gets a new connection to the new address, not the pooled one", async () => {
    const p = createConnectionPool();
    try {
      const a = await serve("127.0.0.1");
      const b = await serve("127.0.0.2", a.port); // same port, another loopback address
      dnsServer.set("rebind.test", "A", ["127.0.0.1"]);
      const url = `http://rebind.test:${a.port}/`;
      expect(await send(p, url)).toMatchObject({ status: 200, body: "127.0.0.1" });
      dnsServer.set("rebind.test", "A", ["127.0.0.2"]);
      expect(await send(p, url)).toMatchObject({ status: 200, body: "127.0.0.2" });
      expect([a.stats.connections, b.stats.connections]).toEqual([1, 1]);
    } finally {
      p.close();
    }
  });

  it("checks the host at every request, even with a warm connection to it", async () => {
    const p = createConnectionPool();
    try {
      const a = await serve("127.0.0.1");
      dnsServer.set("warm.test", "A", ["127.0.0.1"]);
      const url = `http://warm.test:${a.port}/`;
      expect(await send(p, url)).toMatchObject({ status: 200 });
      const asked = dnsServer.queries.filter((q) => q.name === "warm.test").length;
      const refused = await send(p, url, false);
      expect(refused.error).toBe("non-public URL: warm.test resolves to 127.0.0.1: loopback address (127.0.0.0/8)");
      expect(await send(p, url)).toMatchObject({ status: 200 });
      expect(dnsServer.queries.filter((q) => q.name === "warm.test").length).toBeGreaterThan(asked);
      expect(a.stats.connections).toBe(1);
    } finally {
      p.close();
    }
  });
});

/** A port nothing listens on: bind one, then release it. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
