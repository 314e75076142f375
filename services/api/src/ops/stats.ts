import { z } from "zod";
import { timestamp } from "../lib/schemas.ts";
import type { OpsContext } from "./context.ts";
import { dailyBuckets } from "./stats-days.ts";
import {
  attemptPercentiles,
  type Bucketed,
  type DeliveryCounts,
  deliveryCounts,
  type Latency,
  latencyOf,
  latencyPart,
  type MailCounts,
  mailCounts,
  mergeDurations,
  NO_LATENCY,
  noDeliveries,
  noMail,
} from "./stats-queries.ts";

/**
 * What happened to an account's mail and deliveries over the last 24 hours (hourly buckets) or the
 * last 30 days (daily buckets, UTC days): the hours and the live days counted from the rows
 * (stats-queries.ts), the closed days read from stats_days (stats-days.ts).
 */

export const statsWindow = z.enum(["24h", "30d"], "must be 24h or 30d");
export type StatsWindow = z.infer<typeof statsWindow>;

export const statsQuery = z
  .object({
    window: statsWindow
      .default("24h")
      .describe("24h: 24 hourly buckets ending with the current hour; 30d: 30 daily buckets (UTC) ending today"),
  })
  .strict();

const HOUR = 3_600_000;
const WINDOWS = {
  "24h": { bucket: "hour", count: 24, stepMs: HOUR, step: "1 hour" },
  "30d": { bucket: "day", count: 30, stepMs: 24 * HOUR, step: "1 day" },
} as const;

const count = z.number().int().nonnegative();

export const mailCountsSchema = z
  .strictObject({
    stored: count.describe("inbound mail stored (its verdicts computed)"),
    blocked: count.describe("mail dropped by a block shield rule (only a block record kept)"),
    processingFailed: count.describe(
      "inbound mail stored from its raw bytes after its processing budget was used up (verdicts PROCESSING_FAILED)",
    ),
  })
  .meta({ id: "MailCounts" });

export const deliveryCountsSchema = z
  .strictObject({
    succeeded: count.describe("delivered (first try or after retries)"),
    retrying: count.describe("an attempt failed and another is scheduled"),
    dead: count.describe("every attempt failed"),
    pending: count.describe("waiting for its first attempt"),
  })
  .meta({ id: "DeliveryCounts" });

export const latencySchema = z
  .strictObject({
    attempts: count.describe("delivery attempts measured"),
    p50Ms: z.number().int().nullable().describe("median attempt duration; null without attempts"),
    p95Ms: z.number().int().nullable().describe("95th percentile attempt duration; null without attempts"),
  })
  .meta({ id: "Latency" });

export const statsBucketSchema = z
  .strictObject({
    start: timestamp.describe("start of the hour or UTC day"),
    mail: mailCountsSchema.describe("by the time the message was received"),
    deliveries: deliveryCountsSchema.describe("by the time the delivery was created, in its current state"),
    latency: latencySchema.describe("attempts by the time they started"),
  })
  .meta({ id: "StatsBucket" });

export const statsSchema = z
  .strictObject({
    window: statsWindow,
    bucket: z.enum(["hour", "day"]),
    from: timestamp.describe("start of the first bucket"),
    to: timestamp.describe("when the numbers were read"),
    buckets: z.array(statsBucketSchema).describe("oldest first, one per hour or day, empty ones included"),
    totals: z.strictObject({ mail: mailCountsSchema, deliveries: deliveryCountsSchema, latency: latencySchema }),
  })
  .meta({ id: "Stats" });

export type Stats = z.infer<typeof statsSchema>;

/** First bucket's start: the current hour (or UTC day) minus count - 1 steps. */
export function windowStart(window: StatsWindow, now: Date): Date {
  const w = WINDOWS[window];
  const aligned = Math.floor(now.getTime() / w.stepMs) * w.stepMs;
  return new Date(aligned - (w.count - 1) * w.stepMs);
}

/** Every bucket start of the window, oldest first. */
export function bucketStarts(window: StatsWindow, now: Date): Date[] {
  const w = WINDOWS[window];
  const from = windowStart(window, now).getTime();
  return Array.from({ length: w.count }, (_, i) => new Date(from + i * w.stepMs));
}

export const stepOf = (window: StatsWindow) => WINDOWS[window].step;

type Counted = {
  buckets: Bucketed<{ mail: MailCounts; deliveries: DeliveryCounts; latency: Latency }>;
  latency: Latency;
};

/** The 24-hour view: every hour counted from the rows. */
async function hourly(ctx: OpsContext, accountId: string, from: Date): Promise<Counted> {
  const range = { from, until: null, step: WINDOWS["24h"].step };
  const [mail, deliveries, attempts] = await Promise.all([
    mailCounts(ctx, accountId, range),
    deliveryCounts(ctx, accountId, range),
    attemptPercentiles(ctx, accountId, range),
  ]);
  const buckets: Counted["buckets"] = new Map();
  for (const t of new Set([...mail.keys(), ...deliveries.keys(), ...attempts.keys()])) {
    buckets.set(t, {
      mail: mail.get(t) ?? noMail(),
      deliveries: deliveries.get(t) ?? noDeliveries(),
      latency: latencyPart(attempts.get(t)),
    });
  }
  return { buckets, latency: latencyPart(attempts.get(-1)) };
}

/** The 30-day view: closed days from stats_days, yesterday and today from the rows. */
async function daily(ctx: OpsContext, accountId: string, from: Date, now: Date): Promise<Counted> {
  const days = await dailyBuckets(ctx, accountId, from, now);
  const buckets: Counted["buckets"] = new Map();
  for (const [t, d] of days) {
    buckets.set(t, { mail: d.mail, deliveries: d.deliveries, latency: latencyOf(d.attempts.durations) });
  }
  return { buckets, latency: latencyOf(mergeDurations([...days.values()].map((d) => d.attempts.durations))) };
}

/** GET /stats: the account's mail, deliveries and delivery latency over the window, bucket by bucket. */
export async function getStats(
  ctx: OpsContext,
  accountId: string,
  { window }: z.output<typeof statsQuery>,
  now = new Date(),
): Promise<Stats> {
  const w = WINDOWS[window];
  const from = windowStart(window, now);
  const counted = window === "24h" ? await hourly(ctx, accountId, from) : await daily(ctx, accountId, from, now);
  const totals = { mail: noMail(), deliveries: noDeliveries() };
  const buckets = bucketStarts(window, now).map((start) => {
    const b = counted.buckets.get(start.getTime());
    const mail = b?.mail ?? noMail();
    const deliveries = b?.deliveries ?? noDeliveries();
    for (const f of ["stored", "blocked", "processingFailed"] as const) totals.mail[f] += mail[f];
    for (const f of ["succeeded", "retrying", "dead", "pending"] as const) totals.deliveries[f] += deliveries[f];
    return { start: start.toISOString(), mail, deliveries, latency: b?.latency ?? NO_LATENCY };
  });
  return {
    window,
    bucket: w.bucket,
    from: from.toISOString(),
    to: now.toISOString(),
    buckets,
    totals: { ...totals, latency: counted.latency },
  };
}
