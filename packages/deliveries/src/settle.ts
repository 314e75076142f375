import { retryDelayMs } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type EventPublisher, retryFor } from "@mailroom/queues";
import type { AttemptStore } from "./attempt-store.ts";
import { type ClaimedDelivery, loadDelivery } from "./store.ts";

/** What became of one claimed attempt, for webhook and email destinations alike. */
export type SettledOutcome =
  | { outcome: "delivered"; attempt: number }
  | { outcome: "retrying"; attempt: number; nextAttemptAt: Date }
  | { outcome: "dead"; attempt: number }
  | { outcome: "skipped"; reason: string };

/** Why a job found nothing to claim: paused (inactive endpoint) and early (not due, or leased) wait. */
export type UnclaimedOutcome =
  | { outcome: "paused" }
  | { outcome: "early"; nextAttemptAt: Date }
  | { outcome: "skipped"; reason: string };

/** An attempt that was made (the request sent, the message handed over or refused). */
export type MadeAttempt = {
  ok: boolean;
  /** Refused for good (e.g. an SMTP 5xx): dead now, whatever attempts are left. */
  permanent?: boolean;
  statusCode: number | null;
  error: string | null;
  responseBody: string;
  durationMs: number;
  startedAt: Date;
  finishedAt: Date;
};

export type SettleDeps = {
  store: AttemptStore;
  logger: Logger;
  backoffUnitMs: number;
  /** Queues the job of the delivery's attempt `n`, due at `at` (its destination type's queue). */
  requeue: (deliveryId: string, n: number, at: Date) => Promise<unknown>;
  /** Live events (`delivery.succeeded`, `delivery.dead`) for `GET /events`; absent: none are published. */
  events?: EventPublisher;
};

/** How long recording a made attempt is retried while Postgres is unreachable. */
const RECORD_DEADLINE_MS = 120_000;

/**
 * Records a made attempt and schedules what follows (DESIGN.md §3.3): the next attempt's job after
 * the backoff, or, for a final outcome, the live event. The record lands only if no other worker
 * recorded this attempt first (then nothing else happens). Postgres being briefly away must not fail
 * the job (its retry would make the attempt again), so the record is retried for a while.
 * `released` (the endpoint slot's release) is awaited with the record, not before it.
 */
export async function settleAttempt(
  deps: SettleDeps,
  d: ClaimedDelivery,
  made: MadeAttempt,
  released?: Promise<void>,
): Promise<SettledOutcome> {
  const attempt = d.attemptCount + 1;
  const final = made.ok || made.permanent === true || attempt >= d.maxAttempts;
  const nextAttemptAt = final
    ? null
    : new Date(made.finishedAt.getTime() + retryDelayMs(attempt - d.attemptBase, deps.backoffUnitMs));
  const status = made.ok ? "delivered" : final ? "dead" : "retrying";
  const record = () =>
    deps.store.record({
      deliveryId: d.id,
      previousCount: d.attemptCount,
      attempt,
      status,
      nextAttemptAt,
      statusCode: made.statusCode,
      error: made.ok ? null : made.error,
      deliveredAt: made.ok ? made.finishedAt : null,
      durationMs: made.durationMs,
      // Postgres text cannot hold NUL: a record refused for it would make the attempt again later.
      responseBody: made.responseBody.slice(0, 4096).replaceAll("\u0000", "\uFFFD"),
      startedAt: made.startedAt,
      finishedAt: made.finishedAt,
    });
  const recorded = await retryFor(record, {
    deadlineMs: RECORD_DEADLINE_MS,
    onRetry: (err, n) =>
      n === 1 &&
      deps.logger.warn({ deliveryId: d.id, attempt, err: (err as Error).message }, "recording attempt; retrying"),
  }).finally(() => released);
  if (!recorded) return { outcome: "skipped", reason: "attempt recorded by another worker" };
  if (nextAttemptAt) {
    await deps.requeue(d.id, attempt + 1, nextAttemptAt);
    return { outcome: "retrying", attempt, nextAttemptAt };
  }
  // The final outcome is committed: tell the account's live streams.
  const type = made.ok ? "delivery.succeeded" : "delivery.dead";
  await deps.events?.({ type, accountId: d.accountId, deliveryId: d.id, emailId: d.emailId });
  return made.ok ? { outcome: "delivered", attempt } : { outcome: "dead", attempt };
}

/**
 * Why a delivery could not be claimed, from the row as it is now (the rare path: one more
 * statement). `email`: the worker asking serves email destinations (else HTTP ones).
 */
export async function whyNotClaimed(
  prisma: PrismaClient,
  deliveryId: string,
  opts: { expectedAttempt?: number | undefined; at: Date; toleranceMs: number; email?: boolean },
): Promise<UnclaimedOutcome> {
  const d = await loadDelivery(prisma, deliveryId);
  if (!d) return { outcome: "skipped", reason: "delivery not found" };
  if (d.status === "delivered" || d.status === "dead") return { outcome: "skipped", reason: `already ${d.status}` };
  // Each destination type has its own worker (webhook dispatcher, outbound-sender's forward).
  if ((d.endpoint.type === "email") !== (opts.email === true)) {
    return { outcome: "skipped", reason: `${d.endpoint.type} destination: not this worker's` };
  }
  const next = d.attemptCount + 1;
  if (opts.expectedAttempt !== undefined && opts.expectedAttempt !== next) {
    return { outcome: "skipped", reason: `stale job for attempt ${opts.expectedAttempt}; next is ${next}` };
  }
  if (!d.endpoint.active) return { outcome: "paused" };
  // Not yet due, or claimed by another worker (its lease): run again then. A row that changed between
  // the two statements is simply looked at again shortly.
  return { outcome: "early", nextAttemptAt: d.nextAttemptAt ?? new Date(opts.at.getTime() + opts.toleranceMs) };
}

/**
 * Claims the delivery's next attempt (due by `at` + `toleranceMs`; with `expectedAttempt`, only
 * that attempt), or says why not. The claim moves nextAttemptAt to the end of a lease that outlives
 * the attempt: a second job for it (the sweeper re-queued it after Redis lost the running one, or
 * BullMQ wrongly took the running one for stalled) waits for the lease instead of making it
 * concurrently; if this worker dies, the lease runs out and the attempt is made again.
 */
export async function claimNext(
  prisma: PrismaClient,
  store: AttemptStore,
  deliveryId: string,
  opts: { expectedAttempt?: number | undefined; at: Date; toleranceMs: number; email?: boolean },
): Promise<{ claimed: ClaimedDelivery } | { unclaimed: UnclaimedOutcome }> {
  const claimed = await store.claim({
    id: deliveryId,
    ...(opts.expectedAttempt !== undefined ? { expectedCount: opts.expectedAttempt - 1 } : {}),
    dueBy: new Date(opts.at.getTime() + opts.toleranceMs),
    now: opts.at,
  });
  return claimed ? { claimed } : { unclaimed: await whyNotClaimed(prisma, deliveryId, opts) };
}
