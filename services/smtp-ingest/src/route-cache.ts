import { planLimits } from "@mailroom/core";
import type { Lookup, LookupKey, LookupRow } from "./rcpt-lookup.ts";

export type RouteCacheOptions = {
  /** Longest an answer is reused, whatever the notifications say: the bound on a missed one. */
  ttlMs: number;
  /** Domains kept (least recently used dropped first), and answers kept per domain. */
  maxDomains?: number;
  maxPerDomain?: number;
  now?: () => number;
};

type Entry = { rows: LookupRow[]; expires: number };
/** What is cached for one domain name; the ids say which notifications concern it. */
type Bucket = { domainId: string | null; accountId: string | null; entries: Map<string, Entry> };

/**
 * An account this close to its monthly allotment is looked up at every RCPT, so the first look's
 * `452` (recipients.ts) comes as soon as it did without a cache; below it, a cached count may be up
 * to `ttlMs` old, and the exact check at DATA (usage.ts) still refuses what does not fit.
 */
const UNCACHED_SHARE = 0.9;

const roomy = (row: LookupRow): boolean => Number(row.used) < planLimits(row.plan).monthlyAllotment * UNCACHED_SHARE;

/**
 * RCPT answers (rcpt-lookup.ts rows) reused until what decides them changes. Postgres notifies every
 * change to a domain, an address or an account's plan (migration `rcpt_route_notify`, channel
 * `mailroom_routes`); route-listener.ts hands each payload to `invalidate`. Used only while that
 * listener is connected: before the first LISTEN and after a dropped connection every lookup reads
 * Postgres, and a (re)connection flushes everything, since notifications sent meanwhile are lost.
 * A lookup that was in flight when anything was invalidated is answered but not kept (`epoch`), so a
 * read from before a change can never be cached after its notification.
 */
export class RouteCache {
  private readonly buckets = new Map<string, Bucket>();
  private epoch = 0;
  private live = false;
  readonly counts = { hit: 0, miss: 0, bypass: 0 };

  constructor(
    private readonly source: Lookup,
    private readonly opts: RouteCacheOptions,
  ) {}

  /** The cached lookup, in rcpt-lookup's shape. */
  readonly lookup: Lookup = async (key) => {
    if (!this.live) {
      this.counts.bypass += 1;
      return this.source(key);
    }
    const now = this.now();
    const bucket = this.buckets.get(key.domain);
    const entryKey = keyOf(key);
    const hit = bucket?.entries.get(entryKey);
    if (bucket && hit && hit.expires > now) {
      this.counts.hit += 1;
      // Most recently used last: the first domain in the map is the one dropped.
      this.buckets.delete(key.domain);
      this.buckets.set(key.domain, bucket);
      return hit.rows;
    }
    this.counts.miss += 1;
    const epoch = this.epoch;
    const rows = await this.source(key);
    if (this.live && epoch === this.epoch && rows.every(roomy)) this.keep(key, entryKey, rows, now);
    return rows;
  };

  /** Whether answers are being reused (the listener is connected). */
  get connected(): boolean {
    return this.live;
  }

  /** The listener is listening (again): nothing cached before can be trusted. */
  listening(): void {
    this.flush();
    this.live = true;
  }

  /** The listener's connection is gone: read Postgres until it is back. */
  lost(): void {
    this.live = false;
    this.flush();
  }

  /** One notification: `n:<domain name>`, `d:<domain id>`, `a:<account id>`; anything else flushes all. */
  invalidate(payload: string): void {
    this.epoch += 1;
    const value = payload.slice(2);
    const kind = payload.slice(0, 2);
    if (kind === "n:") this.buckets.delete(value);
    else if (kind === "d:") this.dropWhere((b) => b.domainId === value);
    else if (kind === "a:") this.dropWhere((b) => b.accountId === value);
    else this.flush();
  }

  get size(): number {
    return this.buckets.size;
  }

  private flush(): void {
    this.epoch += 1;
    this.buckets.clear();
  }

  private dropWhere(match: (b: Bucket) => boolean): void {
    for (const [name, bucket] of this.buckets) if (match(bucket)) this.buckets.delete(name);
  }

  private keep(key: LookupKey, entryKey: string, rows: LookupRow[], now: number): void {
    const first = rows[0];
    let bucket = this.buckets.get(key.domain);
    if (!bucket) {
      bucket = { domainId: first?.domainId ?? null, accountId: first?.accountId ?? null, entries: new Map() };
      this.buckets.set(key.domain, bucket);
      const oldest = this.buckets.keys().next().value;
      if (this.buckets.size > (this.opts.maxDomains ?? 10_000) && oldest !== undefined) this.buckets.delete(oldest);
    }
    bucket.entries.delete(entryKey);
    bucket.entries.set(entryKey, { rows, expires: now + this.opts.ttlMs });
    const oldestEntry = bucket.entries.keys().next().value;
    if (bucket.entries.size > (this.opts.maxPerDomain ?? 1_000) && oldestEntry !== undefined) {
      bucket.entries.delete(oldestEntry);
    }
  }

  private now(): number {
    return this.opts.now ? this.opts.now() : Date.now();
  }
}

/** One answer per local part (and its untagged form) and month; the domain is the bucket. */
const keyOf = (key: LookupKey): string => `${key.month}\u0000${key.candidates.join("\u0000")}`;
