import { describe, expect, it } from "@jest/globals";
import type { Request } from "express";
import { addressGroup, PRIVATE_PROXIES, parseProxyEntry, proxyTrust, trustedProxyEntries } from "./client-address.ts";

/** The two things clientAddress reads of a request: the peer and X-Forwarded-For. */
const from = (peer: string, forwardedFor?: string) =>
  ({
    socket: { remoteAddress: peer },
    header: (name: string) => (name.toLowerCase() === "x-forwarded-for" ? forwardedFor : undefined),
  }) as unknown as Request;

describe("client address behind trusted proxies", () => {
  const trust = proxyTrust(["10.0.0.0/8", "192.0.2.1", "fd00::/8"]);

  it("believes X-Forwarded-For only from a trusted peer, walking from the right past trusted hops", () => {
    expect(trust.clientAddress(from("203.0.113.5", "198.51.100.1"))).toBe("203.0.113.5");
    expect(trust.clientAddress(from("10.1.2.3", "198.51.100.1"))).toBe("198.51.100.1");
    expect(trust.clientAddress(from("10.1.2.3", "6.6.6.6, 198.51.100.1, 10.9.9.9"))).toBe("198.51.100.1");
    expect(trust.clientAddress(from("::ffff:10.1.2.3", "198.51.100.1"))).toBe("198.51.100.1");
    expect(trust.clientAddress(from("fd00::1", "2001:db8::7"))).toBe("2001:db8::7");
    // Garbage where an address should be: the last good hop stands (a trusted proxy's peer).
    expect(trust.clientAddress(from("10.1.2.3", "not-an-ip"))).toBe("10.1.2.3");
    expect(trust.clientAddress(from("10.1.2.3"))).toBe("10.1.2.3");
  });

  it("reads entries as addresses or CIDR ranges and names a bad one", () => {
    expect(typeof parseProxyEntry("10.0.0.0/8")).not.toBe("string");
    expect(typeof parseProxyEntry("2001:db8::1")).not.toBe("string");
    expect(parseProxyEntry("10.0.0.0/33")).toBe('"10.0.0.0/33" is not an IP address or CIDR range');
    expect(parseProxyEntry("proxy.internal")).toBe('"proxy.internal" is not an IP address or CIDR range');
    expect(() => proxyTrust(["nope"])).toThrow(/^API_TRUSTED_PROXIES: "nope"/);
  });

  it("API_TRUST_PROXY=true alone trusts loopback and private networks; a list replaces that", () => {
    expect(trustedProxyEntries(false, [])).toEqual([]);
    expect(trustedProxyEntries(true, [])).toEqual(PRIVATE_PROXIES);
    expect(trustedProxyEntries(true, ["192.0.2.1"])).toEqual(["192.0.2.1"]);
    const priv = proxyTrust(trustedProxyEntries(true, []));
    for (const a of ["127.0.0.1", "10.2.3.4", "172.20.0.1", "192.168.1.1", "::1", "fd12::1"])
      expect(priv.trusts(a)).toBe(true);
    for (const a of ["8.8.8.8", "172.32.0.1", "2001:db8::1"]) expect(priv.trusts(a)).toBe(false);
  });

  it("counts IPv4 addresses one by one and IPv6 addresses by their /64", () => {
    expect(addressGroup("203.0.113.5")).toBe("203.0.113.5");
    expect(addressGroup("::ffff:203.0.113.5")).toBe("203.0.113.5");
    expect(addressGroup("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(addressGroup("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(addressGroup("2001:db8::1")).toBe("2001:db8:0:0::/64");
  });
});
