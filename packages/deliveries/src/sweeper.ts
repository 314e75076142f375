import { type PrismaClient, poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type DeliveryQueues, enqueueDeliveryAttempt, queueKeyFor } from "./route.ts";

/**
 * Overdue deliveries of active endpoints, oldest first, at most PER_ENDPOINT of one endpoint (one
 * endpoint's backlog, waiting in its line, must not fill every pass). An endpoint whose circuit is open (failing
 * since, webhook dispatcher) gives none until its probe is due, then one: its deliveries wait for
 * the probe, not for a job each.
 */
const PER_ENDPOINT = 100;
const OVERDUE = `
    SELECT "id", "attemptCount", "endpointId" FROM (
      SELECT d."id", d."attemptCount", d."endpointId", d."nextAttemptAt", ep."failingSince" IS NOT NULL AS "open",
             row_number() OVER (PARTITION BY d."endpointId" ORDER BY d."nextAttemptAt" NULLS FIRST, d."id") AS "k"
        FROM "deliveries" d
        JOIN "endpoints" ep ON ep."id" = d."endpointId"
       WHERE d."status" IN ('pending', 'retrying') AND ep."active" AND ep."type" = ANY($1::text[])
         AND (d."nextAttemptAt" <= $2 OR (d."nextAttemptAt" IS NULL AND d."createdAt" <= $2))
         AND (ep."failingSince" IS NULL OR ep."probeAt" IS NULL OR ep."probeAt" <= $3)
    ) o
     WHERE "k" <= CASE WHEN "open" THEN 1 ELSE $5 END
     ORDER BY "nextAttemptAt" NULLS FIRST
     LIMIT $4`;

/**
 * The Delivery row, not Redis, holds the retry schedule. A delivery that is due (pending or
 * retrying, nextAttemptAt passed by more than `graceMs`) on an active endpoint should have a job;
 * if Redis lost it (restart without persistence, a crash between commit and enqueue) or BullMQ
 * gave up on it (our own failures, e.g. the database down through every job retry), queue it
 * again. The job id `<deliveryId>.<attempt>` makes this a no-op when the job is still there, and a
 * job for an attempt already made skips itself. Each worker sweeps its own destination kind (the
 * dispatcher HTTP ones, the forward worker with `email` email ones), through its own queue.
 */
export async function sweepOverdueDeliveries(
  prisma: PrismaClient,
  queues: DeliveryQueues,
  logger: Logger,
  {
    graceMs = 30_000,
    limit = 500,
    now = new Date(),
    email = false,
    waiting,
  }: {
    graceMs?: number | undefined;
    limit?: number;
    now?: Date;
    email?: boolean;
    /** A job that waits elsewhere (the dispatcher's endpoint lines) is not lost: left as it is. */
    waiting?: (endpointId: string, jobId: string) => Promise<boolean>;
  } = {},
): Promise<number> {
  const endpointType = email ? "email" : "webhook";
  const queue = queues[queueKeyFor(endpointType)];
  if (!queue) throw new Error(`no ${queueKeyFor(endpointType)} queue to sweep`);
  const requeue = (id: string, n: number, endpointId: string) =>
    enqueueDeliveryAttempt(queues, { id, endpointType, endpointId }, n, now);
  const before = new Date(now.getTime() - graceMs);
  const { rows: due } = await poolOf(prisma).query<{ id: string; attemptCount: number; endpointId: string }>({
    name: "deliveries-overdue",
    text: OVERDUE,
    values: [email ? ["email"] : ["webhook", "slack", "discord"], before, now, limit, PER_ENDPOINT],
  });
  let requeued = 0;
  for (const d of due) {
    const n = d.attemptCount + 1;
    if (await waiting?.(d.endpointId, `${d.id}.${n}`)) continue;
    const job = await queue.getJob(`${d.id}.${n}`);
    if (job) {
      const state = await job.getState();
      if (state === "failed") {
        await job.retry();
        requeued++;
      } else if (state === "completed") {
        // The job ran but left the attempt unmade (endpoint was paused then): start it afresh.
        await job.remove();
        await requeue(d.id, n, d.endpointId);
        requeued++;
      }
      continue;
    }
    await requeue(d.id, n, d.endpointId);
    requeued++;
  }
  if (requeued) logger.warn({ requeued }, "re-queued overdue deliveries whose jobs were missing");
  return requeued;
}
