import { type CachedResolve, type CacheOptions, createCachedResolve } from "./dns/cache.ts";
import { createDnsQuery, type QueryOptions } from "./dns/query.ts";

/**
 * The resolver mailauth uses for SPF, DKIM and DMARC: one TTL-honouring cache shared by every message,
 * asking DNS_SERVERS (or the system's resolvers) through a TTL-aware stub client.
 */
export function createDnsResolve(
  servers?: string[],
  opts: CacheOptions & Omit<QueryOptions, "servers"> = {},
): CachedResolve {
  const { timeoutMs, tries, ...cache } = opts;
  return createCachedResolve(
    createDnsQuery({
      ...(servers?.length ? { servers } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(tries !== undefined ? { tries } : {}),
    }),
    cache,
  );
}
