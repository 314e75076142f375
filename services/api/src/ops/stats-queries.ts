import type { OpsContext } from "./context.ts";

/**
 * The aggregates behind GET /stats and GET /endpoints/{id}/health: one statement per table, each an
 * index range scan on (accountId or endpointId, time), bucketed with date_bin from the window start.
 */

/** Buckets by their start (epoch ms). */
export type Bucketed<T> = Map<number, T>;
/** [from, until), bucketed by `step` from `from`; until null is "up to now". */
export type Range = { from: Date; until: Date | null; step: string };

export type MailCounts = { stored: number; blocked: number; processingFailed: number };
export type DeliveryCounts = { succeeded: number; retrying: number; dead: number; pending: number };
/** Attempt durations as { ms: how many attempts took that long }: percentiles of merged buckets stay exact. */
export type Durations = Record<string, number>;
export type AttemptBucket = { durations: Durations; failed: number };
export type Latency = { attempts: number; p50Ms: number | null; p95Ms: number | null };

/**
 * Attempts are picked through their delivery, which is found by its creation time: an attempt made
 * in the window belongs to a delivery created at most this long before it (the longest retry budget,
 * 10 attempts, spans about 13 hours; a manual retry of an older delivery is not counted).
 */
export const ATTEMPT_LOOKBACK = "1 day";

const n = (v: bigint | number | null) => Number(v ?? 0);
export const noMail = (): MailCounts => ({ stored: 0, blocked: 0, processingFailed: 0 });
export const noDeliveries = (): DeliveryCounts => ({ succeeded: 0, retrying: 0, dead: 0, pending: 0 });

/** Mail stored / processing failed (inbound emails) and blocked (block records), per bucket. */
export async function mailCounts(ctx: OpsContext, accountId: string, { from, until, step }: Range) {
  const [emails, blocks] = await Promise.all([
    ctx.prisma.$queryRaw<{ start: Date; stored: bigint; failed: bigint }[]>`
      SELECT date_bin(${step}::interval, "receivedAt", ${from}::timestamptz) AS start,
             count(*) FILTER (WHERE "virusVerdict" <> 'PROCESSING_FAILED') AS stored,
             count(*) FILTER (WHERE "virusVerdict" = 'PROCESSING_FAILED') AS failed
        FROM emails
       WHERE "accountId" = ${accountId} AND direction = 'inbound' AND "receivedAt" >= ${from}::timestamptz
         AND (${until}::timestamptz IS NULL OR "receivedAt" < ${until}::timestamptz)
       GROUP BY 1`,
    ctx.prisma.$queryRaw<{ start: Date; blocked: bigint }[]>`
      SELECT date_bin(${step}::interval, "receivedAt", ${from}::timestamptz) AS start, count(*) AS blocked
        FROM block_records
       WHERE "accountId" = ${accountId} AND "receivedAt" >= ${from}::timestamptz
         AND (${until}::timestamptz IS NULL OR "receivedAt" < ${until}::timestamptz)
       GROUP BY 1`,
  ]);
  const out: Bucketed<MailCounts> = new Map();
  const at = (t: Date) => {
    const v = out.get(t.getTime()) ?? noMail();
    out.set(t.getTime(), v);
    return v;
  };
  for (const r of emails) Object.assign(at(r.start), { stored: n(r.stored), processingFailed: n(r.failed) });
  for (const r of blocks) at(r.start).blocked = n(r.blocked);
  return out;
}

/** Deliveries per bucket of their creation, by current status. */
export async function deliveryCounts(
  ctx: OpsContext,
  accountId: string,
  { from, until, step }: Range,
): Promise<Bucketed<DeliveryCounts>> {
  const rows = await ctx.prisma.$queryRaw<
    { start: Date; succeeded: bigint; retrying: bigint; dead: bigint; pending: bigint }[]
  >`
    SELECT date_bin(${step}::interval, "createdAt", ${from}::timestamptz) AS start,
           count(*) FILTER (WHERE status = 'delivered') AS succeeded,
           count(*) FILTER (WHERE status = 'retrying') AS retrying,
           count(*) FILTER (WHERE status = 'dead') AS dead,
           count(*) FILTER (WHERE status = 'pending') AS pending
      FROM deliveries
     WHERE "accountId" = ${accountId} AND "createdAt" >= ${from}::timestamptz
       AND (${until}::timestamptz IS NULL OR "createdAt" < ${until}::timestamptz)
     GROUP BY 1`;
  return new Map(
    rows.map((r) => [
      r.start.getTime(),
      { succeeded: n(r.succeeded), retrying: n(r.retrying), dead: n(r.dead), pending: n(r.pending) },
    ]),
  );
}

/**
 * Attempt durations per bucket of the attempt's start, counted per distinct millisecond value (a
 * hash aggregate: no sort of every attempt), and how many failed; `endpointId` narrows to one endpoint.
 */
export async function attemptDurations(
  ctx: OpsContext,
  accountId: string,
  { from, until, step }: Range,
  endpointId: string | null = null,
): Promise<Bucketed<AttemptBucket>> {
  const rows = await ctx.prisma.$queryRaw<{ start: Date; ms: number; attempts: bigint; failed: bigint }[]>`
    SELECT date_bin(${step}::interval, a."startedAt", ${from}::timestamptz) AS start, a."durationMs" AS ms,
           count(*) AS attempts, count(*) FILTER (WHERE a.error IS NOT NULL) AS failed
      FROM deliveries d JOIN delivery_attempts a ON a."deliveryId" = d.id
     WHERE d."accountId" = ${accountId}
       AND d."createdAt" >= ${from}::timestamptz - ${ATTEMPT_LOOKBACK}::interval
       AND (${until}::timestamptz IS NULL OR d."createdAt" < ${until}::timestamptz)
       AND (${endpointId}::text IS NULL OR d."endpointId" = ${endpointId}::text)
       AND a."startedAt" >= ${from}::timestamptz
       AND (${until}::timestamptz IS NULL OR a."startedAt" < ${until}::timestamptz)
     GROUP BY 1, 2`;
  const out: Bucketed<AttemptBucket> = new Map();
  for (const r of rows) {
    const b = out.get(r.start.getTime()) ?? { durations: {}, failed: 0 };
    b.durations[String(r.ms)] = n(r.attempts);
    b.failed += n(r.failed);
    out.set(r.start.getTime(), b);
  }
  return out;
}

/**
 * Attempt count, failures and exact percentiles (percentile_disc) per bucket of the attempt's start,
 * and over the whole range under the key -1: for the hourly views, where a sort of a day's attempts
 * costs less than carrying every bucket's distinct durations to the API.
 */
export async function attemptPercentiles(
  ctx: OpsContext,
  accountId: string,
  { from, step }: Range,
  endpointId: string | null = null,
): Promise<Bucketed<Latency & { failed: number }>> {
  const rows = await ctx.prisma.$queryRaw<
    { start: Date | null; attempts: bigint; failed: bigint; p50: number | null; p95: number | null }[]
  >`
    SELECT date_bin(${step}::interval, a."startedAt", ${from}::timestamptz) AS start,
           count(*) AS attempts, count(*) FILTER (WHERE a.error IS NOT NULL) AS failed,
           percentile_disc(0.5) WITHIN GROUP (ORDER BY a."durationMs") AS p50,
           percentile_disc(0.95) WITHIN GROUP (ORDER BY a."durationMs") AS p95
      FROM deliveries d JOIN delivery_attempts a ON a."deliveryId" = d.id
     WHERE d."accountId" = ${accountId}
       AND d."createdAt" >= ${from}::timestamptz - ${ATTEMPT_LOOKBACK}::interval
       AND (${endpointId}::text IS NULL OR d."endpointId" = ${endpointId}::text)
       AND a."startedAt" >= ${from}::timestamptz
     GROUP BY GROUPING SETS ((1), ())`;
  return new Map(
    rows.map((r) => [
      r.start ? r.start.getTime() : -1,
      { attempts: n(r.attempts), failed: n(r.failed), p50Ms: r.p50, p95Ms: r.p95 },
    ]),
  );
}

export const NO_LATENCY: Latency = { attempts: 0, p50Ms: null, p95Ms: null };
export const latencyPart = (l: (Latency & { failed: number }) | undefined): Latency =>
  l ? { attempts: l.attempts, p50Ms: l.p50Ms, p95Ms: l.p95Ms } : NO_LATENCY;

/** Durations of several buckets together. */
export function mergeDurations(parts: Iterable<Durations>): Durations {
  const out: Durations = {};
  for (const d of parts) for (const [ms, c] of Object.entries(d)) out[ms] = (out[ms] ?? 0) + c;
  return out;
}

/** percentile_disc: the smallest duration whose cumulative share reaches p. */
export function latencyOf(d: Durations | undefined): Latency {
  const values = Object.entries(d ?? {})
    .map(([ms, c]) => [Number(ms), c] as const)
    .sort((a, b) => a[0] - b[0]);
  const attempts = values.reduce((s, [, c]) => s + c, 0);
  const at = (p: number) => {
    const rank = Math.max(1, Math.ceil(p * attempts));
    let seen = 0;
    for (const [ms, c] of values) {
      seen += c;
      if (seen >= rank) return ms;
    }
    return null;
  };
  return attempts ? { attempts, p50Ms: at(0.5), p95Ms: at(0.95) } : { attempts: 0, p50Ms: null, p95Ms: null };
}
