import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Ingest, type IngestEnv, ingestEnv } from "@mailroom/stack";
import { seedAddress, seedDomain, simpleMessage, waitFor } from "@mailroom/testing";
import { connectionsOf } from "../src/smtp-internals.ts";
import { type RawClient, rawClient } from "./slow-clients.ts";

/**
 * Issue 16 §3: behind a load balancer that speaks PROXY protocol, the client behind it is the
 * session's address: stored as `remoteIp` (what SPF is checked against) and counted by the
 * per-address caps. Real headers over real sockets; the "load balancer" is 127.0.0.1 and a peer
 * outside the trusted list is 127.0.0.2 (all of 127/8 is local on Linux).
 */
describe("smtp-ingest behind a PROXY protocol load balancer", () => {
  let t: IngestEnv;
  let ing: Ingest;
  const open: RawClient[] = [];
  const to = "support@proxied.example";

  beforeAll(async () => {
    t = await ingestEnv();
    const d = await seedDomain(t.prisma, "proxied.example");
    await seedAddress(t.prisma, d, "support");
    ing = await t.start({ proxyProtocol: { trustedCidrs: ["127.0.0.1/32", "::1/128"] }, maxConnectionsPerIp: 1 });
  });
  afterAll(async () => {
    for (const c of open) c.socket.destroy();
    await t?.close();
  });

  /** A connection from `localAddress` that first writes `header`. */
  function through(header: Buffer | string, localAddress = "127.0.0.1"): RawClient {
    const c = rawClient(ing.port, localAddress);
    open.push(c);
    c.socket.write(header);
    return c;
  }

  /** One whole transaction on a greeted connection; the spool row it made. */
  async function deliver(c: RawClient, from: string) {
    expect(await c.reply()).toMatch(/^220 /);
    for (const [line, reply] of [
      ["EHLO client.example", /^250 /],
      [`MAIL FROM:<${from}>`, /^250 2\.1\.0 /],
      [`RCPT TO:<${to}>`, /^250 2\.1\.5 /],
      ["DATA", /^354 /],
      [`${simpleMessage(from, to, "proxied")}\r\n.`, /^250 2\.0\.0 Ok: queued as spl_/],
    ] as const) {
      c.write(`${line}\r\n`);
      expect(await c.reply()).toMatch(reply);
    }
    c.write("QUIT\r\n");
    return t.prisma.spooledMessage.findFirstOrThrow({ where: { mailFrom: from } });
  }

  it("v1: the client named in the header is the stored remoteIp", async () => {
    const c = through("PROXY TCP4 203.0.113.7 198.51.100.1 40000 25\r\n");
    expect((await deliver(c, "v1@sender.example")).remoteIp).toBe("203.0.113.7");
  });

  it("v2 (binary, IPv6 client, with a TLV): the client is the stored remoteIp", async () => {
    const head = Buffer.from("0d0a0d0a000d0a515549540a2121", "hex");
    const block = Buffer.concat([
      Buffer.from("20010db8000000000000000000000007", "hex"), // source 2001:db8::7
      Buffer.from("20010db8000000000000000000000001", "hex"),
      Buffer.from([0x9c, 0x40, 0x00, 0x19]), // ports 40000 → 25
      Buffer.from([0x04, 0x00, 0x01, 0x00]), // PP2_TYPE_NOOP
    ]);
    const len = Buffer.alloc(2);
    len.writeUInt16BE(block.length);
    const c = through(Buffer.concat([head, len, block]));
    expect((await deliver(c, "v2@sender.example")).remoteIp).toBe("2001:db8::7");
  });

  it("the per-address cap counts the clients behind the proxy, not the proxy", async () => {
    // maxConnectionsPerIp is 1: two clients through the same proxy address are both greeted…
    const a = through("PROXY TCP4 203.0.113.20 198.51.100.1 1 25\r\n");
    const b = through("PROXY TCP4 203.0.113.21 198.51.100.1 2 25\r\n");
    expect(await a.reply()).toMatch(/^220 /);
    expect(await b.reply()).toMatch(/^220 /);
    // …and a second connection of the same client is refused.
    const again = through("PROXY TCP4 203.0.113.20 198.51.100.1 3 25\r\n");
    expect(await again.reply()).toMatch(/^421 4\.7\.0 Too many connections from your address/);
    a.socket.destroy();
    b.socket.destroy();
  });

  it("a peer outside the trusted CIDRs is refused 554 before any SMTP, whatever it sends", async () => {
    const c = through("PROXY TCP4 203.0.113.9 198.51.100.1 1 25\r\n", "127.0.0.2");
    expect(await c.reply()).toMatch(/^554 5\.7\.1 /);
    await c.closed;
    expect(c.lines.some((l) => l.startsWith("220"))).toBe(false);
  });

  it("a trusted peer without a header (plain SMTP) is dropped, never greeted", async () => {
    const c = through("EHLO direct.example\r\n");
    await c.closed;
    expect(c.lines).toEqual([]);
    await waitFor(async () => connectionsOf(ing.server).size === 0, { what: "no session left" });
  });
});
