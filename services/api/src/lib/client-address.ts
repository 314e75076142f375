import { isIP } from "node:net";
import type { Request } from "express";
import ipaddr from "ipaddr.js";

/**
 * Who the client is, when a proxy may stand in front: `X-Forwarded-For` and `X-Forwarded-Proto`
 * are believed only from a peer whose address is a trusted proxy (API_TRUSTED_PROXIES), never from
 * a client that reaches the API directly — otherwise it could name any address it likes and so
 * dodge every per-address limit (the sign-in throttle and lockout).
 */

/**
 * What `API_TRUST_PROXY=true` trusts when API_TRUSTED_PROXIES is not set: a proxy on this host or
 * on a private network (loopback, RFC 1918, link-local, IPv6 unique-local and link-local), the usual
 * place of a reverse proxy, an ingress controller or a cloud load balancer. A proxy with a public
 * address must be listed.
 */
export const PRIVATE_PROXIES = [
  "127.0.0.0/8",
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "169.254.0.0/16",
  "::1/128",
  "fc00::/7",
  "fe80::/10",
] as const;

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** An address as a client gives it; `::ffff:10.0.0.1` (an IPv4 client of a dual-stack socket) is 10.0.0.1. */
function parse(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const t = text.trim();
  return isIP(t) === 0 ? null : ipaddr.process(t);
}

/** One API_TRUSTED_PROXIES entry (`10.0.0.5`, `10.0.0.0/8`, `fd00::/8`), or what is wrong with it. */
export function parseProxyEntry(text: string): Range | string {
  const t = text.trim();
  if (!t.includes("/")) {
    const one = parse(t);
    return one ? [one, one.kind() === "ipv4" ? 32 : 128] : `"${text}" is not an IP address or CIDR range`;
  }
  try {
    return ipaddr.parseCIDR(t);
  } catch {
    return `"${text}" is not an IP address or CIDR range`;
  }
}

export type ProxyTrust = {
  trusts(address: string): boolean;
  /** The client's address: the socket's, or walking X-Forwarded-For from the right past trusted proxies. */
  clientAddress(req: Request): string;
  /** Served over TLS: the connection, or X-Forwarded-Proto: https from a trusted proxy. */
  overTls(req: Request): boolean;
};

export function proxyTrust(entries: readonly string[]): ProxyTrust {
  const ranges = entries.map((text) => {
    const r = parseProxyEntry(text);
    if (typeof r === "string") throw new Error(`API_TRUSTED_PROXIES: ${r}`);
    return r;
  });
  const trusts = (address: string) => {
    const a = parse(address);
    return a !== null && ranges.some(([base, bits]) => base.kind() === a.kind() && a.match(base, bits));
  };
  const peer = (req: Request) => req.socket.remoteAddress ?? "";
  return {
    trusts,
    clientAddress(req) {
      const socket = peer(req);
      let address = parse(socket)?.toString() ?? (socket || "unknown");
      if (!trusts(address)) return address;
      const hops = (req.header("x-forwarded-for") ?? "").split(",");
      // Each trusted proxy appended the address it was reached from; the first untrusted one from
      // the right is the client. Anything left of it is the client's to invent and is not read.
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = parse(hops[i] ?? "");
        if (!hop) break;
        address = hop.toString();
        if (!trusts(address)) break;
      }
      return address;
    },
    overTls(req) {
      if ((req.socket as { encrypted?: boolean }).encrypted) return true;
      if (!trusts(peer(req))) return false;
      return req.header("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() === "https";
    },
  };
}

/** The trusted proxies the settings name: the list when given, else the private ranges when API_TRUST_PROXY is on. */
export function trustedProxyEntries(trustProxy: boolean, listed: readonly string[]): readonly string[] {
  if (listed.length > 0) return listed;
  return trustProxy ? PRIVATE_PROXIES : [];
}

/**
 * The unit a per-address limit counts: an IPv4 address, or the /64 of an IPv6 one (one subscriber
 * usually holds a whole /64 and could otherwise take a fresh address for every guess).
 */
export function addressGroup(address: string): string {
  const a = parse(address);
  if (!a) return address;
  if (a.kind() === "ipv4") return a.toString();
  const prefix = (a as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16));
  return `${prefix.join(":")}::/64`;
}
