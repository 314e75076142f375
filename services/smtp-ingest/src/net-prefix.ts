import { isIPv4, isIPv6 } from "node:net";

/**
 * The network a client address belongs to for the per-network cap: its /24 for IPv4 and its /64
 * for IPv6 (one end site: a single customer is usually given a whole /64, or more, so counting
 * IPv6 per address would give an attacker billions of "different" clients). smtp-server already
 * strips the IPv4-mapped prefix (`::ffff:a.b.c.d`) from remote addresses.
 */
export function networkOf(address: string): string {
  const ip = unmapIPv4(address);
  if (isIPv4(ip)) return `${ip.split(".").slice(0, 3).join(".")}.0/24`;
  if (isIPv6(ip)) return `${expandIPv6(ip).slice(0, 4).join(":")}::/64`;
  return ip; // not an IP (a Unix socket, a test double): its own network
}

/** The eight hextets of an IPv6 address, lower case without leading zeros. */
function expandIPv6(ip: string): string[] {
  let text = ip.toLowerCase().replace(/%.*$/, ""); // a zone id says nothing about the network
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const fill = tail === undefined ? [] : Array(8 - left.length - right.length).fill("0");
  return [...left, ...fill, ...right].map((h) => Number.parseInt(h, 16).toString(16));
}

/** `::ffff:a.b.c.d` (how a dual-stack listener reports an IPv4 peer) as `a.b.c.d`; others unchanged. */
export const unmapIPv4 = (address: string): string => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "");
