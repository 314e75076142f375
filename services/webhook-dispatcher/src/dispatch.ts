import { emailReceivedPayload, emailView, retryDelayMs } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import { buildDeliveryRequest, judgeResponse } from "@mailroom/egress";
import type { Logger } from "@mailroom/log";
import { type EventPublisher, enqueue, type Queue, retryFor } from "@mailroom/queues";
import type { EndpointSlots } from "./slots.ts";
import { claimAttempt, loadDelivery, recordAttempt } from "./store.ts";

export type SendRequest = { url: string; body: string; headers: Record<string, string>; timeoutMs: number };
export type SendResult = { status: number | null; body: string; durationMs: number; error: string | null };
export type Send = (req: SendRequest) => Promise<SendResult>;

export type DispatchDeps = {
  prisma: PrismaClient;
  queue: Queue;
  logger: Logger;
  send: Send;
  publicApiUrl: string;
  backoffUnitMs: number;
  /** Per-endpoint concurrency limit; without it every attempt goes ahead. */
  slots?: EndpointSlots;
  /** How long recording a made attempt is retried while Postgres is unreachable (default 2 min). */
  recordDeadlineMs?: number;
  /** Live events (`delivery.succeeded`, `delivery.dead`) for `GET /events`; absent: none are published. */
  events?: EventPublisher;
  now?: () => Date;
};

export type AttemptOutcome =
  | { outcome: "delivered"; attempt: number }
  | { outcome: "retrying"; attempt: number; nextAttemptAt: Date }
  | { outcome: "dead"; attempt: number }
  /** The endpoint is inactive: no attempt; the delivery waits until it is active again. */
  | { outcome: "paused" }
  /** The endpoint already has its maximum of attempts in flight: try again shortly. */
  | { outcome: "busy"; endpointId: string }
  /** The job ran before the row's nextAttemptAt: run it again then. */
  | { outcome: "early"; nextAttemptAt: Date }
  | { outcome: "skipped"; reason: string };

/** A job may fire this much before nextAttemptAt and still count as on time. */
const EARLY_TOLERANCE_MS = 500;
/** A slot lease outlives the longest attempt (30 s timeout + DNS) so a crashed worker frees it. */
const SLOT_LEASE_MARGIN_MS = 15_000;
const RECORD_DEADLINE_MS = 120_000;

/**
 * One delivery attempt (DESIGN.md §3.3). The Delivery row is the source of truth: the attempt is
 * recorded and the next one scheduled in one transaction that only succeeds if no other worker
 * recorded this attempt number first. `expectedAttempt` (from the job id `<id>.<n>`) makes a stale
 * job — one whose attempt was already made — a no-op.
 */
export async function attemptDelivery(
  deps: DispatchDeps,
  deliveryId: string,
  opts: { expectedAttempt?: number; holder?: string } = {},
): Promise<AttemptOutcome> {
  const { prisma } = deps;
  const now = deps.now ?? (() => new Date());
  const d = await loadDelivery(prisma, deliveryId);
  if (!d) return { outcome: "skipped", reason: "delivery not found" };
  if (d.status === "delivered" || d.status === "dead") return { outcome: "skipped", reason: `already ${d.status}` };
  // Email destinations (mailto:) are forwarded over SMTP by the outbound-sender, not posted here.
  if (d.endpoint.type === "email") return { outcome: "skipped", reason: "email destination (outbound-sender)" };
  const attempt = d.attemptCount + 1;
  if (opts.expectedAttempt !== undefined && opts.expectedAttempt !== attempt) {
    return { outcome: "skipped", reason: `stale job for attempt ${opts.expectedAttempt}; next is ${attempt}` };
  }
  if (!d.endpoint.active) return { outcome: "paused" };
  if (d.nextAttemptAt && d.nextAttemptAt.getTime() - now().getTime() > EARLY_TOLERANCE_MS) {
    return { outcome: "early", nextAttemptAt: d.nextAttemptAt };
  }

  const timeoutMs = d.endpoint.timeoutSeconds * 1000;
  const holder = opts.holder ?? `${d.id}.${attempt}`;
  if (deps.slots && !(await deps.slots.acquire(d.endpointId, holder, timeoutMs + SLOT_LEASE_MARGIN_MS))) {
    return { outcome: "busy", endpointId: d.endpointId };
  }

  // Claim the attempt in Postgres before sending: nextAttemptAt moves to the end of a lease that
  // outlives the request. A second job for this attempt (the sweeper re-queued it after Redis lost
  // the running one, or BullMQ wrongly took the running one for stalled) finds the claim and waits
  // for the lease instead of POSTing concurrently; if this worker dies, the lease runs out and the
  // attempt is made again.
  const leaseUntil = new Date(now().getTime() + timeoutMs + SLOT_LEASE_MARGIN_MS);
  const claimed = await claimAttempt(prisma, d, leaseUntil).catch(async (err) => {
    await deps.slots?.release(d.endpointId, holder).catch(() => undefined);
    throw err;
  });
  if (!claimed) {
    await deps.slots?.release(d.endpointId, holder).catch(() => undefined);
    return { outcome: "early", nextAttemptAt: leaseUntil };
  }

  let result: SendResult;
  let startedAt: Date;
  let finishedAt: Date;
  try {
    const payload = emailReceivedPayload({
      deliveryId: d.id,
      createdAt: d.createdAt,
      email: emailView(d.email, d.email.attachments, deps.publicApiUrl),
      domain: d.email.domain?.domain ?? "",
      address: d.email.recipient ?? "",
      endpointId: d.endpointId,
    });
    startedAt = now();
    const { body, headers } = buildDeliveryRequest(d.endpoint, payload, startedAt);
    result = await deps.send({ url: d.endpoint.url, body, headers, timeoutMs });
    finishedAt = now();
  } finally {
    await deps.slots?.release(d.endpointId, holder).catch(() => undefined);
  }

  const verdict = judgeResponse(result);
  // 410 Gone is a non-2xx answer like any other: spec §3/§6 retry every one until maxAttempts
  // (a receiver briefly answering 410 during a deploy must not lose the event). Only noted.
  const gone = result.status === 410 && result.error === null;
  const exhausted = attempt >= d.maxAttempts;
  const nextAttemptAt =
    verdict.ok || exhausted
      ? null
      : new Date(finishedAt.getTime() + retryDelayMs(attempt - d.attemptBase, deps.backoffUnitMs));
  const status = verdict.ok ? "delivered" : exhausted ? "dead" : "retrying";
  const error = verdict.ok ? null : gone ? "HTTP 410 (gone)" : verdict.error;

  // The request went out; now it must be recorded. Postgres being briefly away must not fail the job
  // (its retry would POST again), so keep trying for a while.
  const record = () =>
    recordAttempt(prisma, {
      deliveryId: d.id,
      previousCount: d.attemptCount,
      attempt,
      status,
      nextAttemptAt,
      statusCode: result.status,
      error,
      deliveredAt: verdict.ok ? finishedAt : null,
      durationMs: result.durationMs,
      responseBody: result.body.slice(0, 4096),
      startedAt,
      finishedAt,
    });
  const recorded = await retryFor(record, {
    deadlineMs: deps.recordDeadlineMs ?? RECORD_DEADLINE_MS,
    onRetry: (err, n) =>
      n === 1 && deps.logger.warn({ deliveryId, attempt, err: (err as Error).message }, "recording attempt; retrying"),
  });
  if (!recorded) return { outcome: "skipped", reason: "attempt recorded by another worker" };

  if (nextAttemptAt) {
    await enqueueAttempt(deps.queue, d.id, attempt + 1, nextAttemptAt);
    return { outcome: "retrying", attempt, nextAttemptAt };
  }
  // The final outcome is committed: tell the account's live streams.
  const type = verdict.ok ? "delivery.succeeded" : "delivery.dead";
  await deps.events?.({ type, accountId: d.accountId, deliveryId: d.id, emailId: d.emailId });
  return verdict.ok ? { outcome: "delivered", attempt } : { outcome: "dead", attempt };
}

/** The job of attempt `n`: its id dedupes re-enqueues by the sweeper or a restarted process. */
export function enqueueAttempt(queue: Queue, deliveryId: string, n: number, at: Date) {
  return enqueue(
    queue,
    "delivery",
    { deliveryId },
    { jobId: `${deliveryId}.${n}`, delay: Math.max(0, at.getTime() - Date.now()) },
  );
}

/** The attempt number in a job id `<deliveryId>.<n>`, or undefined for any other id. */
export function attemptOfJobId(jobId: string | undefined): number | undefined {
  const m = /\.(\d+)$/.exec(jobId ?? "");
  return m ? Number(m[1]) : undefined;
}
