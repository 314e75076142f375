import type { PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { enqueue, type Queue } from "@mailroom/queues";

/**
 * Postgres, not Redis, is the source of truth for accepted mail: a recipient still `pending` long
 * after it was spooled lost its job (Redis restarted without persistence, a crash between commit and
 * enqueue). Queue it again; the job id makes that a no-op when the job is in fact still there.
 */
export async function sweepPendingRecipients(
  prisma: PrismaClient,
  queue: Queue,
  logger: Logger,
  { olderThanMs = 120_000, limit = 500, now = new Date() } = {},
): Promise<number> {
  const stale = await prisma.spoolRecipient.findMany({
    // `storing`: stored, but the attachment bytes may not have been written (process died).
    where: { status: { in: ["pending", "storing"] }, createdAt: { lt: new Date(now.getTime() - olderThanMs) } },
    select: { id: true },
    orderBy: { createdAt: "asc" },
    take: limit,
  });
  let requeued = 0;
  for (const { id } of stale) {
    try {
      const job = await queue.getJob(id);
      if (job) {
        // BullMQ gave up on it (its attempts ran out, e.g. while Postgres was down): a fresh budget.
        if (await job.isFailed()) {
          await job.retry("failed", { resetAttemptsMade: true });
          requeued++;
        }
        continue;
      }
      await enqueue(queue, "inbound", { spoolRecipientId: id }, { jobId: id });
      requeued++;
    } catch (err) {
      // One recipient (e.g. retried by another sweeper a moment ago) must not stop the pass.
      logger.warn({ spoolRecipientId: id, err: (err as Error).message }, "could not re-queue recipient");
    }
  }
  if (requeued) logger.warn({ requeued }, "re-queued spooled recipients whose jobs were missing");
  return requeued;
}

/**
 * Raw bytes that nothing needs any more: every recipient blocked, a duplicate or dropped, and no
 * Email refers to them. processRecipient purges them itself; this catches a process that died
 * between recording the verdict and purging.
 */
export async function purgeUnusedSpools(
  prisma: PrismaClient,
  logger: Logger,
  { olderThanMs = 120_000, now = new Date() } = {},
): Promise<number> {
  const { count } = await prisma.spooledMessage.deleteMany({
    where: {
      receivedAt: { lt: new Date(now.getTime() - olderThanMs) },
      recipients: { none: { status: { in: ["pending", "storing"] } } },
      emails: { none: {} },
    },
  });
  if (count) logger.info({ purged: count }, "purged spooled messages no recipient needs");
  return count;
}
