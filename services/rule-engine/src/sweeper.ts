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
    where: { status: "pending", createdAt: { lt: new Date(now.getTime() - olderThanMs) } },
    select: { id: true },
    orderBy: { createdAt: "asc" },
    take: limit,
  });
  let requeued = 0;
  for (const { id } of stale) {
    const job = await queue.getJob(id);
    if (job) {
      if (await job.isFailed()) {
        await job.retry();
        requeued++;
      }
      continue;
    }
    await enqueue(queue, "inbound", { spoolRecipientId: id }, { jobId: id });
    requeued++;
  }
  if (requeued) logger.warn({ requeued }, "re-queued spooled recipients whose jobs were missing");
  return requeued;
}
