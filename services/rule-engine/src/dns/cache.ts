import type { DnsResolve } from "../verdicts.ts";
import { type DnsQuery, DnsQueryError, QUERY_TYPES, type QueryType } from "./query.ts";

/**
 * A caching resolver in front of `DnsQuery`, shared by SPF, DKIM and DMARC of every message (the rule
 * engine passes it to mailauth as its resolver). Without it each message asked the same TXT/A/MX
 * questions again, and the burst of parallel lookups was what capped the rule engine's rate.
 *
 * - Positive answers live for their TTL (capped by `maxTtlS`).
 * - NXDOMAIN/NODATA live for the SOA's negative TTL (capped by `negativeTtlMaxS`); an answer
 *   without an SOA is not cached (RFC 2308 §5).
 * - SERVFAIL, REFUSED and timeouts live `errorTtlMs` (RFC 2308 §7 allows up to 5 minutes): a burst
 *   from a domain whose DNS is down then costs one timeout, not one per message.
 * - Identical questions in flight share one query; at most `maxInFlight` queries are on the wire.
 * - At most `maxEntries` answers are kept, least recently used evicted first.
 */
export type CacheOptions = {
  maxEntries?: number;
  maxTtlS?: number;
  negativeTtlMaxS?: number;
  errorTtlMs?: number;
  maxInFlight?: number;
  now?: () => number;
};

type Entry =
  | { ok: true; records: unknown[]; expires: number }
  | { ok: false; code: string; message: string; expires: number };

export type CachedResolve = DnsResolve & { readonly size: number; clear(): void };

export function createCachedResolve(query: DnsQuery, opts: CacheOptions = {}): CachedResolve {
  const maxEntries = opts.maxEntries ?? 10_000;
  const maxTtlMs = (opts.maxTtlS ?? 3_600) * 1000;
  const negativeTtlMaxMs = (opts.negativeTtlMaxS ?? 300) * 1000;
  const errorTtlMs = opts.errorTtlMs ?? 5_000;
  const now = opts.now ?? Date.now;
  const limit = createLimit(opts.maxInFlight ?? 8);
  const entries = lruEntries(maxEntries, now);
  const inFlight = new Map<string, Promise<Entry>>();

  const lookup = async (name: string, type: QueryType): Promise<Entry> => {
    try {
      const { records, ttlS } = await limit(() => query(name, type));
      return { ok: true, records, expires: now() + Math.min(ttlS * 1000, maxTtlMs) };
    } catch (err) {
      const e = err instanceof DnsQueryError ? err : new DnsQueryError("EBADRESP", String(err));
      const negative = e.code === "ENOTFOUND" || e.code === "ENODATA";
      const ttlMs = negative ? Math.min((e.negativeTtlS ?? 0) * 1000, negativeTtlMaxMs) : errorTtlMs;
      return { ok: false, code: e.code, message: e.message, expires: now() + ttlMs };
    }
  };

  const resolve = async (rawName: string, rrtype: string): Promise<unknown> => {
    const type = rrtype.toUpperCase();
    if (!QUERY_TYPES.has(type)) throw Object.assign(new Error(`unsupported DNS type ${rrtype}`), { code: "ENOTIMP" });
    const name = rawName.toLowerCase().replace(/\.$/, "");
    const key = `${type} ${name}`;
    let entry = entries.get(key);
    if (!entry) {
      let pending = inFlight.get(key);
      if (!pending) {
        pending = lookup(name, type as QueryType).then((e) => {
          inFlight.delete(key);
          entries.store(key, e);
          return e;
        });
        inFlight.set(key, pending);
      }
      entry = await pending;
    }
    // Callers own what they get: mailauth annotates errors (err.spfResult) and may reorder arrays.
    if (entry.ok) return structuredClone(entry.records);
    throw Object.assign(new Error(entry.message), { code: entry.code, hostname: name });
  };

  return Object.defineProperties(resolve, {
    size: { get: () => entries.size },
    clear: { value: () => entries.clear() },
  }) as CachedResolve;
}

/** Unexpired entries, at most `maxEntries`: the least recently used one goes first. */
function lruEntries(maxEntries: number, now: () => number) {
  const entries = new Map<string, Entry>(); // insertion order = recency order
  return {
    get size() {
      return entries.size;
    },
    clear: () => entries.clear(),
    store(key: string, entry: Entry): void {
      if (entry.expires <= now()) return;
      entries.delete(key);
      entries.set(key, entry);
      while (entries.size > maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest === undefined) break;
        entries.delete(oldest);
      }
    },
    get(key: string): Entry | undefined {
      const entry = entries.get(key);
      if (!entry) return undefined;
      entries.delete(key);
      if (entry.expires <= now()) return undefined;
      entries.set(key, entry); // most recently used
      return entry;
    },
  };
}

/** At most `n` calls of `fn` running at once; the rest wait in order. A finished call hands its slot on. */
function createLimit(n: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  const acquire = (): Promise<void> => {
    if (running < n) {
      running++;
      return Promise.resolve();
    }
    return new Promise<void>((r) => waiting.push(r));
  };
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    await acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  };
}
