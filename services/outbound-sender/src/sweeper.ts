import type { PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { enqueue, type TypedQueue } from "@mailroom/queues";

/**
 * Postgres is the truth for outbound mail: an email still waiting well past its attempt time lost its
 * job (Redis restarted, the API could not enqueue), and one still `sending` past its lease lost its
 * worker. Both are queued again; the job id makes that a no-op while the job still exists.
 */
export async function sweepOutbound(
  prisma: PrismaClient,
  queue: TypedQueue<"outbound">,
  logger: Logger,
  { graceMs = 60_000, limit = 200, now = new Date() } = {},
): Promise<number> {
  await prisma.email.updateMany({
    where: { sendStatus: "sending", sendNextAttemptAt: { lt: now } },
    data: { sendStatus: "retrying" },
  });
  const due = await prisma.email.findMany({
    where: {
      sendStatus: { in: ["queued", "retrying"] },
      sendNextAttemptAt: { lt: new Date(now.getTime() - graceMs) },
    },
    select: { id: true, sendAttempts: true },
    orderBy: { sendNextAttemptAt: "asc" },
    take: limit,
  });
  let requeued = 0;
  for (const e of due) {
    const jobId = `${e.id}.${e.sendAttempts + 1}`;
    const job = await queue.getJob(jobId);
    if (job) {
      if (await job.isFailed()) {
        await job.retry();
        requeued++;
      }
      continue;
    }
    await enqueue(queue, "outbound", { emailId: e.id }, { jobId });
    requeued++;
  }
  if (requeued) logger.warn({ requeued }, "re-queued outbound emails whose jobs were missing");
  return requeued;
}
