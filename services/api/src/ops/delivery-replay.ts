import { invalid } from "@mailroom/core";
import { z } from "zod";
import type { OpsContext } from "./context.ts";

/**
 * Bulk replay: every dead delivery matching a filter re-opened at once, as `retryDelivery` does for
 * one (fresh budget of the endpoint's current `maxAttempts`, same delivery id, backoff restarting
 * at 1 minute). Used by `POST /deliveries/retry` and the MCP tool `retry_deliveries`.
 */

const instant = (what: string) =>
  z.iso
    .datetime({ offset: true, error: "must be an ISO 8601 timestamp, e.g. 2026-01-31T12:00:00Z" })
    .optional()
    .describe(what);

export const bulkRetryBody = z
  .strictObject({
    endpointId: z
      .string({ error: "must be a single string" })
      .regex(/^ep_[0-9A-Za-z]+$/, "must be an id starting with ep_")
      .optional()
      .describe("only this endpoint's deliveries; default: every endpoint of the account"),
    status: z
      .literal("dead", { error: "must be dead (only dead deliveries are replayed in bulk)" })
      .default("dead")
      .describe("dead: deliveries that used their whole attempt budget"),
    since: instant("deliveries created at or after this instant"),
    until: instant("deliveries created at or before this instant"),
  })
  .describe("Filter; every field is optional and they combine (AND)");

export const bulkRetryResultSchema = z
  .strictObject({
    retried: z.number().int().describe("deliveries re-opened by this call; 0 when nothing (more) matched"),
  })
  .meta({ id: "BulkRetryResult" });

/** Rows re-opened per statement: bounded transactions however many deliveries match. */
const BATCH = 500;

type Reopened = { id: string; attemptCount: number; type: string };

/**
 * Safe to call twice: only `dead` rows match, and re-opening makes them `pending`, so a second call
 * (or a concurrent one: rows are claimed with SKIP LOCKED) re-opens none of them again.
 */
export async function retryDeliveries(ctx: OpsContext, accountId: string, f: z.output<typeof bulkRetryBody>) {
  const since = f.since ? new Date(f.since) : null;
  const until = f.until ? new Date(f.until) : null;
  if (since && until && since > until) throw invalid("since: must not be after until");
  let retried = 0;
  for (;;) {
    const now = new Date();
    const rows = await ctx.prisma.$queryRaw<Reopened[]>`
      WITH picked AS (
        SELECT d.id FROM deliveries d
        WHERE d."accountId" = ${accountId}
          AND d.status = 'dead'
          AND (${f.endpointId ?? null}::text IS NULL OR d."endpointId" = ${f.endpointId ?? null}::text)
          AND (${since}::timestamptz IS NULL OR d."createdAt" >= ${since}::timestamptz)
          AND (${until}::timestamptz IS NULL OR d."createdAt" <= ${until}::timestamptz)
        ORDER BY d."createdAt", d.id
        LIMIT ${BATCH}
        FOR UPDATE OF d SKIP LOCKED
      )
      UPDATE deliveries d
      SET status = 'pending',
          "attemptBase" = d."attemptCount",
          "maxAttempts" = d."attemptCount" + e."maxAttempts",
          "nextAttemptAt" = ${now}::timestamptz,
          "deliveredAt" = NULL,
          "updatedAt" = ${now}::timestamptz
      FROM picked, endpoints e
      WHERE d.id = picked.id AND e.id = d."endpointId"
      RETURNING d.id, d."attemptCount" AS "attemptCount", e.type`;
    retried += rows.length;
    await queueAttempts(ctx, rows);
    if (rows.length < BATCH) break;
  }
  return { retried };
}

/**
 * The re-opened rows are due now; queueing them (each on its destination type's queue) is a shortcut,
 * not the record: if Redis is away the sweepers queue due deliveries themselves.
 */
async function queueAttempts(ctx: OpsContext, rows: readonly Reopened[]) {
  const enqueue = ctx.enqueueDelivery;
  if (!enqueue) return;
  await Promise.all(
    rows.map((r) =>
      enqueue({ id: r.id, endpointType: r.type }, r.attemptCount + 1).catch((err: Error) => {
        ctx.logger.warn({ deliveryId: r.id, err: err.message }, "could not queue the retried delivery");
      }),
    ),
  );
}
