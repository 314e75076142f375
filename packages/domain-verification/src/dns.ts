import { promises as dns } from "node:dns";

/**
 * The outcome of one DNS question. `not_found` is an authoritative "no such record" (NXDOMAIN or
 * NODATA): it counts as evidence. `failed` (timeout, SERVFAIL, refused, unreachable server) says
 * nothing about the zone, so it must never change a domain's status.
 */
export type Lookup = { kind: "found"; values: string[] } | { kind: "not_found" } | { kind: "failed"; code: string };

export type DomainDns = {
  /** MX exchanges, normalised (lowercase, no trailing dot). */
  mx(name: string): Promise<Lookup>;
  /** CNAME targets of `name` itself, normalised. */
  cname(name: string): Promise<Lookup>;
};

export type DnsOptions = {
  /** `host` or `host:port` entries; empty or undefined: the system's resolvers. */
  servers?: readonly string[];
  /** Per-try timeout. */
  timeoutMs?: number;
  tries?: number;
};

const NOT_FOUND_CODES = new Set<string>([dns.NOTFOUND, dns.NODATA]);

export const normalizeName = (name: string): string => name.trim().toLowerCase().replace(/\.+$/, "");

/**
 * DNS lookups with timeouts against `servers` (or the system's). Every lookup gets its own resolver,
 * so that the overall deadline can cancel it without cancelling the others.
 */
export function createDomainDns({ servers, timeoutMs = 5_000, tries = 2 }: DnsOptions = {}): DomainDns {
  const list = servers?.length ? [...servers] : undefined;
  // c-ares backs off between tries; the overall deadline bounds the whole lookup regardless.
  const deadlineMs = timeoutMs * (tries + 1);

  const run = async (query: (r: dns.Resolver) => Promise<string[]>): Promise<Lookup> => {
    const resolver = new dns.Resolver({ timeout: timeoutMs, tries });
    if (list) resolver.setServers(list);
    const timer = setTimeout(() => resolver.cancel(), deadlineMs);
    try {
      const values = await query(resolver);
      return values.length ? { kind: "found", values: [...new Set(values.map(normalizeName))] } : { kind: "not_found" };
    } catch (err) {
      const code = String((err as { code?: unknown }).code ?? "EUNKNOWN");
      if (NOT_FOUND_CODES.has(code)) return { kind: "not_found" };
      return { kind: "failed", code: code === dns.CANCELLED ? dns.TIMEOUT : code };
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    mx: (name) => run(async (r) => (await r.resolveMx(name)).map((m) => m.exchange)),
    cname: (name) => run((r) => r.resolveCname(name)),
  };
}
