import { describe, expect, it } from "@jest/globals";
import { parseCidr, trustedPeers } from "./cidr.ts";
import { ingestEnvSchema } from "./env.ts";
import { parseProxyHeader } from "./proxy-protocol.ts";

const SIG = Buffer.from("0d0a0d0a000d0a515549540a", "hex");

/** A v2 header: version 2, `command`, `famProto`, then `block` (addresses, ports, TLVs). */
function v2(command: number, famProto: number, block: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0x20 | command;
  head[1] = famProto;
  head.writeUInt16BE(block.length, 2);
  return Buffer.concat([SIG, head, block]);
}
const ports = (src: number, dst: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt16BE(src, 0);
  b.writeUInt16BE(dst, 2);
  return b;
};

describe("parseProxyHeader", () => {
  it("reads v1 TCP4, TCP6 and UNKNOWN lines, and waits for the rest of a line", () => {
    const line = Buffer.from("PROXY TCP4 203.0.113.7 198.51.100.1 40000 25\r\nEHLO x\r\n");
    expect(parseProxyHeader(line)).toEqual({
      kind: "ok",
      length: 46,
      source: { address: "203.0.113.7", port: 40000 },
    });
    expect(parseProxyHeader(line.subarray(0, 20))).toEqual({ kind: "more" });
    expect(parseProxyHeader(Buffer.from("PRO"))).toEqual({ kind: "more" });
    expect(parseProxyHeader(Buffer.from("PROXY TCP6 2001:db8::7 2001:db8::1 5 25\r\n"))).toMatchObject({
      kind: "ok",
      source: { address: "2001:db8::7", port: 5 },
    });
    expect(parseProxyHeader(Buffer.from("PROXY UNKNOWN\r\n"))).toEqual({ kind: "ok", length: 15, source: null });
  });

  it("refuses malformed v1 lines and anything that is not a PROXY header", () => {
    for (const text of [
      "EHLO client.example\r\n",
      "PROXY TCP4 2001:db8::7 198.51.100.1 1 25\r\n", // wrong family
      "PROXY TCP4 203.0.113.7 198.51.100.1 70000 25\r\n",
      "PROXY TCP4 203.0.113.7 198.51.100.1 1\r\n",
      "PROXY TCP5 203.0.113.7 198.51.100.1 1 25\r\n",
      "PROXY TCP4 not-an-ip 198.51.100.1 1 25\r\n",
      `PROXY TCP4 ${"1".repeat(120)}`, // no CRLF within 107 bytes
    ]) {
      expect(parseProxyHeader(Buffer.from(text)).kind).toBe("invalid");
    }
  });

  it("reads v2 IPv4 and IPv6 PROXY commands (TLVs skipped), LOCAL and AF_UNSPEC without a client", () => {
    const tlv = Buffer.from([0x04, 0x00, 0x02, 0xaa, 0xbb]); // PP2_TYPE_NOOP
    const ipv4 = v2(1, 0x11, Buffer.concat([Buffer.from([203, 0, 113, 9, 10, 0, 0, 1]), ports(1234, 25), tlv]));
    expect(parseProxyHeader(Buffer.concat([ipv4, Buffer.from("EHLO x\r\n")]))).toEqual({
      kind: "ok",
      length: ipv4.length,
      source: { address: "203.0.113.9", port: 1234 },
    });
    for (let n = 0; n < ipv4.length; n++) expect(parseProxyHeader(ipv4.subarray(0, n))).toEqual({ kind: "more" });

    const src6 = Buffer.from("20010db8000000000000000000000042", "hex");
    const ipv6 = v2(1, 0x21, Buffer.concat([src6, Buffer.alloc(16), ports(65535, 25)]));
    expect(parseProxyHeader(ipv6)).toMatchObject({ source: { address: "2001:db8:0:0:0:0:0:42", port: 65535 } });

    expect(parseProxyHeader(v2(0, 0x00, Buffer.alloc(0)))).toEqual({ kind: "ok", length: 16, source: null });
    expect(parseProxyHeader(v2(1, 0x00, Buffer.alloc(0)))).toEqual({ kind: "ok", length: 16, source: null });
  });

  it("refuses v2 headers with another version or command, a short block or an oversized length", () => {
    const good = v2(1, 0x11, Buffer.concat([Buffer.alloc(8), ports(1, 2)]));
    const version1 = Buffer.from(good);
    version1[12] = 0x11;
    expect(parseProxyHeader(version1).kind).toBe("invalid");
    const command2 = Buffer.from(good);
    command2[12] = 0x22;
    expect(parseProxyHeader(command2).kind).toBe("invalid");
    expect(parseProxyHeader(v2(1, 0x11, Buffer.alloc(8))).kind).toBe("invalid");
    expect(parseProxyHeader(v2(1, 0x21, Buffer.alloc(12))).kind).toBe("invalid");
    const huge = Buffer.concat([SIG, Buffer.from([0x21, 0x11, 0xff, 0xff])]);
    expect(parseProxyHeader(huge).kind).toBe("invalid");
  });
});

describe("trusted PROXY peers", () => {
  it("parses CIDRs and bare addresses and refuses anything else", () => {
    expect(parseCidr("10.0.0.0/8")).toEqual({ address: "10.0.0.0", prefix: 8, family: "ipv4" });
    expect(parseCidr("fd00::/8")).toEqual({ address: "fd00::", prefix: 8, family: "ipv6" });
    expect(parseCidr("192.0.2.1")).toEqual({ address: "192.0.2.1", prefix: 32, family: "ipv4" });
    for (const bad of ["10.0.0.0/33", "fd00::/129", "10.0.0/8", "lb.example", "10.0.0.0/8/1", "10.0.0.0/x"]) {
      expect(parseCidr(bad)).toBeNull();
    }
  });

  it("trusts exactly the listed networks, IPv4-mapped peers included", () => {
    const trusted = trustedPeers(["10.0.0.0/8", "2001:db8:1::/48", "192.0.2.5"]);
    expect(trusted("10.20.30.40")).toBe(true);
    expect(trusted("::ffff:10.1.2.3")).toBe(true);
    expect(trusted("11.0.0.1")).toBe(false);
    expect(trusted("2001:db8:1:ffff::1")).toBe(true);
    expect(trusted("2001:db8:2::1")).toBe(false);
    expect(trusted("192.0.2.5")).toBe(true);
    expect(trusted("192.0.2.6")).toBe(false);
    expect(trusted("")).toBe(false);
  });

  it("settings: PROXY on needs the trusted CIDRs, and each must parse", () => {
    const parse = (env: Record<string, string>) => ingestEnvSchema.safeParse(env);
    expect(parse({}).data).toMatchObject({ SMTP_PROXY_PROTOCOL: false, SMTP_PROXY_TRUSTED_CIDRS: [] });
    expect(parse({ SMTP_PROXY_PROTOCOL: "true" }).success).toBe(false);
    expect(parse({ SMTP_PROXY_PROTOCOL: "true", SMTP_PROXY_TRUSTED_CIDRS: "10.0.0.0/8, lb" }).success).toBe(false);
    expect(parse({ SMTP_PROXY_PROTOCOL: "true", SMTP_PROXY_TRUSTED_CIDRS: "10.0.0.0/8, fd00::/8" }).data).toMatchObject(
      { SMTP_PROXY_PROTOCOL: true, SMTP_PROXY_TRUSTED_CIDRS: ["10.0.0.0/8", "fd00::/8"] },
    );
  });
});
