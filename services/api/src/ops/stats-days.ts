import type { OpsContext } from "./context.ts";
import {
  type AttemptBucket,
  attemptDurations,
  type Bucketed,
  type DeliveryCounts,
  deliveryCounts,
  type MailCounts,
  mailCounts,
  noDeliveries,
  noMail,
} from "./stats-queries.ts";

/**
 * The 30-day view's closed days, counted once and kept in stats_days. A UTC day is closed when it
 * ended more than a day ago: every delivery created in it has used its attempts by then (the longest
 * budget spans about 13 hours), so its numbers no longer change. Yesterday and today are counted live
 * on every request. A manual retry of an older delivery is not reflected in its closed day; mail
 * deleted by retention stays counted in the day it arrived.
 */

export type Day = { mail: MailCounts; deliveries: DeliveryCounts; attempts: AttemptBucket };

const DAY_MS = 86_400_000;
const STEP = "1 day";

type StoredDay = {
  day: Date;
  stored: number;
  blocked: number;
  processingFailed: number;
  succeeded: number;
  retrying: number;
  dead: number;
  pending: number;
  durations: Record<string, number>;
  failedAttempts: number;
};

const fromRow = (r: StoredDay): Day => ({
  mail: { stored: r.stored, blocked: r.blocked, processingFailed: r.processingFailed },
  deliveries: { succeeded: r.succeeded, retrying: r.retrying, dead: r.dead, pending: r.pending },
  attempts: { durations: r.durations, failed: r.failedAttempts },
});

/** The days [from, until) counted from the rows (one statement per table over the whole span). */
async function countDays(ctx: OpsContext, accountId: string, from: Date, until: Date | null) {
  const range = { from, until, step: STEP };
  const [mail, deliveries, attempts] = await Promise.all([
    mailCounts(ctx, accountId, range),
    deliveryCounts(ctx, accountId, range),
    attemptDurations(ctx, accountId, range),
  ]);
  return (t: number): Day => ({
    mail: mail.get(t) ?? noMail(),
    deliveries: deliveries.get(t) ?? noDeliveries(),
    attempts: attempts.get(t) ?? { durations: {}, failed: 0 },
  });
}

async function storeDays(ctx: OpsContext, accountId: string, days: [number, Day][]) {
  if (!days.length) return;
  await ctx.prisma.statsDay.createMany({
    data: days.map(([t, d]) => ({
      accountId,
      day: new Date(t),
      ...d.mail,
      ...d.deliveries,
      durations: d.attempts.durations,
      failedAttempts: d.attempts.failed,
    })),
    // Two requests counting the same day write the same numbers: the first one stays.
    skipDuplicates: true,
  });
}

/** Every day of [from, today], `from` and `now`'s day UTC midnights apart by whole days. */
export async function dailyBuckets(ctx: OpsContext, accountId: string, from: Date, now: Date): Promise<Bucketed<Day>> {
  const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  const liveFrom = Math.max(from.getTime(), today - DAY_MS);
  const kept = await ctx.prisma.$queryRaw<StoredDay[]>`
    SELECT day::timestamp AT TIME ZONE 'UTC' AS day, stored, blocked, "processingFailed", succeeded, retrying, dead, pending,
           durations, "failedAttempts"
      FROM stats_days
     WHERE "accountId" = ${accountId} AND day >= (${from}::timestamptz AT TIME ZONE 'UTC')::date
       AND day < (${new Date(liveFrom)}::timestamptz AT TIME ZONE 'UTC')::date`;
  const out: Bucketed<Day> = new Map(kept.map((r) => [r.day.getTime(), fromRow(r)]));
  const missing: number[] = [];
  for (let t = from.getTime(); t < liveFrom; t += DAY_MS) if (!out.has(t)) missing.push(t);
  const [closed, live] = await Promise.all([
    missing.length
      ? countDays(ctx, accountId, new Date(missing[0] as number), new Date(liveFrom))
      : Promise.resolve(undefined),
    countDays(ctx, accountId, new Date(liveFrom), null),
  ]);
  if (closed) {
    const counted = missing.map((t) => [t, closed(t)] as [number, Day]);
    await storeDays(ctx, accountId, counted);
    for (const [t, d] of counted) out.set(t, d);
  }
  for (let t = liveFrom; t <= today; t += DAY_MS) out.set(t, live(t));
  return out;
}
