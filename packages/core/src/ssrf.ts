import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * SSRF address classification (DESIGN §4): pure, no DNS. The egress package resolves host names and
 * asks this module about every resulting address, at endpoint creation and at every delivery.
 */

export type AddressClass = { public: true } | { public: false; reason: string };

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = { cidr: [Address, number]; reason: string };

function range(cidr: string, reason: string): Range {
  return { cidr: ipaddr.parseCIDR(cidr), reason: `${reason} (${cidr})` };
}

// Order matters: the first matching range names the reason (255.255.255.255 before 240/4).
const V4_REFUSED: readonly Range[] = [
  range("0.0.0.0/8", "unspecified address"),
  range("10.0.0.0/8", "private address"),
  range("100.64.0.0/10", "carrier-grade NAT address"),
  range("127.0.0.0/8", "loopback address"),
  range("169.254.0.0/16", "link-local address"),
  range("172.16.0.0/12", "private address"),
  range("192.0.0.0/24", "IETF protocol assignment address"),
  range("192.0.2.0/24", "documentation address"),
  range("192.88.99.0/24", "6to4 relay anycast address"),
  range("192.168.0.0/16", "private address"),
  range("198.18.0.0/15", "benchmarking address"),
  range("198.51.100.0/24", "documentation address"),
  range("203.0.113.0/24", "documentation address"),
  range("224.0.0.0/4", "multicast address"),
  range("255.255.255.255/32", "broadcast address"),
  range("240.0.0.0/4", "reserved address"),
];

const V6_REFUSED: readonly Range[] = [
  range("::/128", "unspecified address"),
  range("::1/128", "loopback address"),
  range("64:ff9b:1::/48", "local-use NAT64 address"),
  range("100::/64", "discard-only address"),
  range("2001::/32", "Teredo address"),
  range("2001:2::/48", "benchmarking address"),
  range("2001:10::/28", "ORCHID address"),
  range("2001:20::/28", "ORCHIDv2 address"),
  range("2001:db8::/32", "documentation address"),
  range("3fff::/20", "documentation address"),
  range("fc00::/7", "unique-local address"),
  range("fe80::/10", "link-local address"),
  range("fec0::/10", "site-local address"),
  range("ff00::/8", "multicast address"),
];

const V4_MAPPED = range("::ffff:0:0/96", "");
const V4_COMPATIBLE = range("::/96", "");
const NAT64 = range("64:ff9b::/96", "");
const SIX_TO_FOUR = range("2002::/16", "");
const GLOBAL_UNICAST = range("2000::/3", "");

export function classifyAddress(ip: string): AddressClass {
  const addr = parseAddress(ip);
  if (!addr) return { public: false, reason: "not an IP address" };
  if (addr.kind() === "ipv4") return classifyV4(addr as ipaddr.IPv4);
  const bytes = addr.toByteArray();

  // IPv6 forms that carry an IPv4 address. Mapped and compatible addresses reach the embedded
  // host directly on dual-stack machines, so they are refused whatever they embed (DESIGN §4).
  if (matches(addr, V4_MAPPED) || matches(addr, V4_COMPATIBLE)) {
    const kind = matches(addr, V4_MAPPED) ? "IPv4-mapped" : "IPv4-compatible";
    if (bytes.every((b) => b === 0)) return { public: false, reason: "unspecified address (::/128)" };
    if (bytes.slice(0, 15).every((b) => b === 0) && bytes[15] === 1) {
      return { public: false, reason: "loopback address (::1/128)" };
    }
    const v4 = new ipaddr.IPv4(bytes.slice(12));
    const inner = classifyV4(v4);
    const detail = inner.public ? "" : `, ${inner.reason}`;
    return { public: false, reason: `${kind} IPv6 address (embeds ${v4}${detail})` };
  }
  // NAT64 and 6to4 are translated to the embedded IPv4 address by a gateway: judge that address.
  if (matches(addr, NAT64)) return embedded(new ipaddr.IPv4(bytes.slice(12)), "NAT64");
  if (matches(addr, SIX_TO_FOUR)) return embedded(new ipaddr.IPv4(bytes.slice(2, 6)), "6to4");

  const hit = V6_REFUSED.find((r) => matches(addr, r));
  if (hit) return { public: false, reason: hit.reason };
  // Everything outside 2000::/3 is unassigned or special-purpose, never a public unicast host.
  if (!matches(addr, GLOBAL_UNICAST)) return { public: false, reason: "reserved address (outside 2000::/3)" };
  return { public: true };
}

function classifyV4(addr: ipaddr.IPv4): AddressClass {
  const hit = V4_REFUSED.find((r) => matches(addr, r));
  return hit ? { public: false, reason: hit.reason } : { public: true };
}

function embedded(v4: ipaddr.IPv4, kind: string): AddressClass {
  const inner = classifyV4(v4);
  return inner.public ? inner : { public: false, reason: `${kind} address embedding ${v4}, ${inner.reason}` };
}

function matches(addr: Address, r: Range): boolean {
  return addr.kind() === r.cidr[0].kind() && addr.match(r.cidr);
}

/**
 * The address, or null. Only what node:net's isIP accepts (ipaddr.js alone also takes `127.1`,
 * `0x7f.0.0.1` and decimal forms). A zone id (`fe80::1%eth0`) is ignored. IPv6 goes through the
 * WHATWG URL serializer first, which writes it as hex groups (RFC 5952): ipaddr.js reads the
 * deprecated IPv4-compatible `::a.b.c.d` as IPv4-mapped `::ffff:a.b.c.d`, a different address.
 */
function parseAddress(input: string): Address | null {
  const ip = input.replace(/%.*$/, "");
  const family = isIP(ip);
  if (family === 4) return ipaddr.IPv4.parse(ip);
  if (family === 6) return ipaddr.IPv6.parse(new URL(`http://[${ip}]`).hostname.slice(1, -1));
  return null;
}

/** Bytes of an IPv4 (4) or IPv6 (16) address, or null. */
export function parseIp(input: string): number[] | null {
  return parseAddress(input)?.toByteArray() ?? null;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; error: string };

export const MAX_URL_LENGTH = 2048;

/**
 * Syntax and literal-address checks for an endpoint URL. Host names are not resolved here (that is
 * I/O, see @mailroom/egress); IP literals are judged now. The WHATWG parser has already turned
 * `http://2130706433/`, `http://0x7f.1/` and similar into dotted quads, so one check covers them.
 * Messages carry no field name: the caller prefixes `url: `.
 */
export function validateEndpointUrl(raw: string, opts: { allowPrivate?: boolean } = {}): UrlCheck {
  if (raw.length > MAX_URL_LENGTH) return { ok: false, error: `must be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, error: "is not a valid URL" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, error: "must use http or https" };
  if (url.username || url.password) return { ok: false, error: "must not contain credentials" };
  const host = hostOf(url);
  if (!host) return { ok: false, error: "must have a host" };
  if (opts.allowPrivate) return { ok: true, url };
  if (isIP(host)) {
    const verdict = classifyAddress(host);
    if (!verdict.public) return { ok: false, error: `non-public URL: ${host}: ${verdict.reason}` };
  } else if (isLocalhostName(host)) {
    return { ok: false, error: `non-public URL: ${host}: loopback name (RFC 6761)` };
  }
  return { ok: true, url };
}

/** The URL's host without IPv6 brackets or a trailing root dot, lowercased. */
export function hostOf(url: URL): string {
  return url.hostname
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
    .toLowerCase();
}

/** RFC 6761: `localhost` and `*.localhost` always mean loopback and are never asked of DNS. */
export function isLocalhostName(host: string): boolean {
  const h = host.replace(/\.$/, "").toLowerCase();
  return h === "localhost" || h.endsWith(".localhost");
}
