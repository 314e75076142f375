import { promises as dns } from "node:dns";
import type { DnsResolve } from "./verdicts.ts";

/** A resolver for mailauth with timeouts, optionally pointed at specific servers (DNS_SERVERS). */
export function createDnsResolve(servers?: string[]): DnsResolve {
  const resolver = new dns.Resolver({ timeout: 3_000, tries: 2 });
  if (servers?.length) resolver.setServers(servers);
  return (name, rrtype) => resolver.resolve(name, rrtype as "TXT");
}
