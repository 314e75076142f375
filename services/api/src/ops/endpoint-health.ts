import { z } from "zod";
import { timestamp } from "../lib/schemas.ts";
import type { OpsContext } from "./context.ts";
import { findOwnedEndpoint } from "./endpoints.ts";
import { bucketStarts, deliveryCountsSchema, latencySchema, stepOf, windowStart } from "./stats.ts";
import { ATTEMPT_LOOKBACK, attemptPercentiles, latencyPart } from "./stats-queries.ts";

/**
 * How one endpoint is doing: its attempts of the last 24 hours (success rate, latency, hour by hour),
 * its latest failures with what it answered, since when it has been failing, and what waits for it.
 */

/** How much of a failure's response body the health view quotes (the attempt keeps 4 KB). */
const EXCERPT = 300;
const LAST_FAILURES = 5;
/** How far back "failing since" looks for the last success when the dispatcher has not set it. */
const FAILING_LOOKBACK = "1 day";

const failureSchema = z
  .strictObject({
    deliveryId: z.string(),
    emailId: z.string(),
    attempt: z.number().int().describe("the attempt's number within its delivery"),
    at: timestamp.describe("when the attempt started"),
    statusCode: z.number().int().nullable().describe("null when no response arrived"),
    error: z.string().describe("timeout, unreachable, non-public URL, redirect, HTTP <status>"),
    durationMs: z.number().int(),
    responseExcerpt: z.string().describe(`first ${EXCERPT} characters of the response body`),
  })
  .meta({ id: "EndpointFailure" });

export const endpointHealthSchema = z
  .strictObject({
    endpointId: z.string(),
    from: timestamp.describe("start of the 24 hourly buckets"),
    to: timestamp.describe("when the numbers were read"),
    attempts: z.number().int().describe("attempts started since `from`"),
    succeeded: z.number().int(),
    failed: z.number().int(),
    successRate: z.number().nullable().describe("succeeded / attempts, 0 to 1; null without attempts"),
    latency: latencySchema,
    failingSince: timestamp
      .nullable()
      .describe(
        "since when the endpoint has been failing: the endpoint's own failingSince (its circuit is open) or, before that, when its latest attempt failed, the first failed attempt after its last success (within the deliveries of the last day); null when the latest attempt succeeded or there is none",
      ),
    backlog: z
      .strictObject({
        pending: z.number().int().describe("deliveries waiting for their first attempt"),
        retrying: z.number().int().describe("deliveries waiting for a retry"),
        nextAttemptAt: timestamp.nullable().describe("the earliest scheduled attempt"),
      })
      .describe("deliveries not finished yet, whenever they were created"),
    deliveries: deliveryCountsSchema.describe("deliveries created since `from`, by current status"),
    lastFailures: z.array(failureSchema).describe(`the ${LAST_FAILURES} latest failed attempts, newest first`),
    hourly: z
      .array(
        z.strictObject({
          start: timestamp,
          attempts: z.number().int(),
          failed: z.number().int(),
          p50Ms: z.number().int().nullable(),
          p95Ms: z.number().int().nullable(),
        }),
      )
      .describe("24 buckets, oldest first"),
  })
  .meta({ id: "EndpointHealth" });

export type EndpointHealth = z.infer<typeof endpointHealthSchema>;

type FailureRow = {
  deliveryId: string;
  emailId: string;
  number: number;
  startedAt: Date;
  statusCode: number | null;
  error: string;
  durationMs: number;
  responseBody: string | null;
};

/** The endpoint's latest failed attempts (deliveries of the last day first found by the endpoint index). */
async function lastFailures(ctx: OpsContext, endpointId: string, from: Date) {
  const rows = await ctx.prisma.$queryRaw<FailureRow[]>`
    SELECT a."deliveryId", d."emailId", a.number, a."startedAt", a."statusCode", a.error, a."durationMs",
           left(a."responseBody", ${EXCERPT}) AS "responseBody"
      FROM deliveries d JOIN delivery_attempts a ON a."deliveryId" = d.id
     WHERE d."endpointId" = ${endpointId}
       AND d."createdAt" >= ${from}::timestamptz - ${ATTEMPT_LOOKBACK}::interval
       AND a.error IS NOT NULL
     ORDER BY a."startedAt" DESC, a.id DESC
     LIMIT ${LAST_FAILURES}`;
  return rows.map((r) => ({
    deliveryId: r.deliveryId,
    emailId: r.emailId,
    attempt: r.number,
    at: r.startedAt.toISOString(),
    statusCode: r.statusCode,
    error: r.error,
    durationMs: r.durationMs,
    responseExcerpt: r.responseBody ?? "",
  }));
}

/**
 * Before the dispatcher opens the endpoint's circuit (Endpoint.failingSince), derived from the
 * attempts: when the latest attempt failed, the first attempt after the latest success (or the first
 * of the lookback when none succeeded in it).
 */
async function failingSince(ctx: OpsContext, endpointId: string): Promise<Date | null> {
  const rows = await ctx.prisma.$queryRaw<{ since: Date | null }[]>`
    WITH att AS (
      SELECT a."startedAt", a.error IS NULL AS ok
        FROM deliveries d JOIN delivery_attempts a ON a."deliveryId" = d.id
       WHERE d."endpointId" = ${endpointId} AND d."createdAt" >= now() - ${FAILING_LOOKBACK}::interval
    ), latest_ok AS (SELECT max("startedAt") AS at FROM att WHERE ok)
    SELECT CASE WHEN (SELECT ok FROM att ORDER BY "startedAt" DESC LIMIT 1) IS DISTINCT FROM false THEN NULL
                ELSE (SELECT min("startedAt") FROM att, latest_ok
                       WHERE latest_ok.at IS NULL OR att."startedAt" > latest_ok.at) END AS since`;
  return rows[0]?.since ?? null;
}

async function backlog(ctx: OpsContext, endpointId: string) {
  const rows = await ctx.prisma.$queryRaw<{ pending: bigint; retrying: bigint; next: Date | null }[]>`
    SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
           count(*) FILTER (WHERE status = 'retrying') AS retrying,
           min("nextAttemptAt") AS next
      FROM deliveries
     WHERE status IN ('pending', 'retrying') AND "endpointId" = ${endpointId}`;
  const r = rows[0];
  return {
    pending: Number(r?.pending ?? 0),
    retrying: Number(r?.retrying ?? 0),
    nextAttemptAt: r?.next ? r.next.toISOString() : null,
  };
}

async function deliveriesSince(ctx: OpsContext, endpointId: string, from: Date) {
  const rows = await ctx.prisma.$queryRaw<{ status: string; n: bigint }[]>`
    SELECT status, count(*) AS n FROM deliveries
     WHERE "endpointId" = ${endpointId} AND "createdAt" >= ${from}::timestamptz GROUP BY status`;
  const of = (s: string) => Number(rows.find((r) => r.status === s)?.n ?? 0);
  return { succeeded: of("delivered"), retrying: of("retrying"), dead: of("dead"), pending: of("pending") };
}

/** GET /endpoints/{id}/health (another account's endpoint: 404). */
export async function getEndpointHealth(
  ctx: OpsContext,
  accountId: string,
  id: string,
  now = new Date(),
): Promise<EndpointHealth> {
  const ep = await findOwnedEndpoint(ctx, accountId, id);
  const from = windowStart("24h", now);
  const [attempts, failures, waiting, deliveries] = await Promise.all([
    attemptPercentiles(ctx, accountId, { from, until: null, step: stepOf("24h") }, ep.id),
    lastFailures(ctx, ep.id, from),
    backlog(ctx, ep.id),
    deliveriesSince(ctx, ep.id, from),
  ]);
  // No failed attempt among the deliveries lastFailures looked at (a longer span than
  // failingSince's): nothing to derive, which spares healthy endpoints that scan.
  const since = ep.failingSince ?? (failures.length ? await failingSince(ctx, ep.id) : null);
  const latency = latencyPart(attempts.get(-1));
  const total = { ...latency, failed: attempts.get(-1)?.failed ?? 0 };
  return {
    endpointId: ep.id,
    from: from.toISOString(),
    to: now.toISOString(),
    attempts: total.attempts,
    succeeded: total.attempts - total.failed,
    failed: total.failed,
    successRate: total.attempts ? (total.attempts - total.failed) / total.attempts : null,
    latency,
    failingSince: since ? since.toISOString() : null,
    backlog: waiting,
    deliveries,
    lastFailures: failures,
    hourly: bucketStarts("24h", now).map((start) => {
      const b = attempts.get(start.getTime());
      return { start: start.toISOString(), ...latencyPart(b), failed: b?.failed ?? 0 };
    }),
  };
}
