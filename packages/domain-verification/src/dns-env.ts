import { z } from "zod";
import { assertDnsServers, parseDnsServers } from "./dns.ts";

/** `DNS_SERVERS`: comma-separated `host` or `host:port` entries; unset or empty: the system's resolvers. */
export const dnsServersEnv = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const servers = parseDnsServers(v);
    try {
      assertDnsServers(servers);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: `not a list of DNS servers (${(err as Error).message})` });
      return z.NEVER;
    }
    return servers;
  });
