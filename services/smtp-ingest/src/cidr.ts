import { BlockList, isIP } from "node:net";
import { unmapIPv4 } from "./net-prefix.ts";

/** `a.b.c.d/n`, `x:y::/n` or a bare address (one host). Null if malformed. */
export function parseCidr(text: string): { address: string; prefix: number; family: "ipv4" | "ipv6" } | null {
  const [address = "", prefixText, extra] = text.trim().split("/");
  const version = isIP(address);
  if (!version || extra !== undefined) return null;
  const bits = version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return null;
  return { address, prefix, family: version === 4 ? "ipv4" : "ipv6" };
}

/** The peers allowed to speak PROXY protocol to us. Throws on a malformed entry (env.ts checks first). */
export function trustedPeers(cidrs: string[]): (peer: string) => boolean {
  const list = new BlockList();
  for (const text of cidrs) {
    const c = parseCidr(text);
    if (!c) throw new Error(`not a CIDR: ${text}`);
    list.addSubnet(c.address, c.prefix, c.family);
  }
  return (peer) => {
    const ip = unmapIPv4(peer);
    const version = isIP(ip);
    return version !== 0 && list.check(ip, version === 4 ? "ipv4" : "ipv6");
  };
}
