import { Resolver } from "node:dns";
import { z } from "zod";

/** Splits a `DNS_SERVERS` value (comma or whitespace separated `host` / `host:port` / `[v6]:port`). */
export function parseDnsServers(value: string | undefined): string[] {
  return (value ?? "")
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Throws (with the resolver's own message) when an entry is not something `setServers` accepts. */
export function assertDnsServers(servers: readonly string[]): void {
  if (servers.length) new Resolver().setServers([...servers]);
}

/**
 * `DNS_SERVERS`, the one definition every service uses (API, dispatcher, rule engine, verifier), so
 * one setting means the same servers everywhere and a malformed value stops the service at start.
 * Unset or empty: the system's resolvers (an empty list).
 */
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
