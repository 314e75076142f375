import { promises as dns } from "node:dns";

/**
 * The resolver behind every SSRF check: endpoint create/update and `POST /endpoints/{id}/test` in the
 * API, each delivery attempt in the dispatcher. Both build it here from the same `DNS_SERVERS` list
 * (parsed once, by `dnsServersEnv` in @mailroom/config), so creation and delivery ask the same
 * servers and cannot see different answers. An empty list: the system's resolvers.
 */
export function createEgressResolver(servers: readonly string[] = []): dns.Resolver {
  const resolver = new dns.Resolver({ timeout: 3_000, tries: 2 });
  if (servers.length > 0) resolver.setServers([...servers]);
  return resolver;
}
