import type { PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type DeliveryQueues, enqueueDeliveryAttempt, queueKeyFor } from "./route.ts";

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
  { graceMs = 30_000, limit = 500, now = new Date(), email = false } = {},
): Promise<number> {
  const endpointType = email ? "email" : "webhook";
  const queue = queues[queueKeyFor(endpointType)];
  if (!queue) throw new Error(`no ${queueKeyFor(endpointType)} queue to sweep`);
  const requeue = (id: string, n: number) => enqueueDeliveryAttempt(queues, { id, endpointType }, n, now);
  const before = new Date(now.getTime() - graceMs);
  const due = await prisma.delivery.findMany({
    where: {
      status: { in: ["pending", "retrying"] },
      endpoint: { active: true, type: email ? "email" : { in: ["webhook", "slack", "discord"] } },
      OR: [{ nextAttemptAt: { lte: before } }, { nextAttemptAt: null, createdAt: { lte: before } }],
    },
    select: { id: true, attemptCount: true },
    orderBy: { nextAttemptAt: "asc" },
    take: limit,
  });
  let requeued = 0;
  for (const d of due) {
    const n = d.attemptCount + 1;
    const job = await queue.getJob(`${d.id}.${n}`);
    if (job) {
      const state = await job.getState();
      if (state === "failed") {
        await job.retry();
        requeued++;
      } else if (state === "completed") {
        // The job ran but left the attempt unmade (endpoint was paused then): start it afresh.
        await job.remove();
        await requeue(d.id, n);
        requeued++;
      }
      continue;
    }
    await requeue(d.id, n);
    requeued++;
  }
  if (requeued) logger.warn({ requeued }, "re-queued overdue deliveries whose jobs were missing");
  return requeued;
}
