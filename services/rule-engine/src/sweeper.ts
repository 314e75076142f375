import type { PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type AccountVolume, accountVolume, enqueue, type TypedQueue } from "@mailroom/queues";

/**
 * Postgres, not Redis, is the source of truth for accepted mail: a recipient still `pending` long
 * after it was spooled lost its job (Redis restarted without persistence, a crash between commit and
 * enqueue). Queue its job again (the job of its group: `jobId`, or its own id for a row written
 * before groups); the job id makes that a no-op when the job is in fact still there.
 *
 * Pages through every such recipient, oldest first (keyset on createdAt, id), however many are
 * ahead: a backlog of messages that are retrying (poison, or a long outage) must not hide the ones
 * behind it whose jobs are gone. Recipients whose job is still in Redis are skipped with one
 * pipelined round trip per page. A job queued again ranks by its account's volume, as the ingest's
 * do (`volume`: one per sweeper, so a Redis that lost 5,000 jobs of one account does not put them
 * ahead of everyone else's next message).
 */
export async function sweepPendingRecipients(
  prisma: PrismaClient,
  queue: TypedQueue<"inbound">,
  logger: Logger,
  { olderThanMs = 120_000, pageSize = 500, now = new Date(), volume = accountVolume() } = {},
): Promise<number> {
  const cutoff = new Date(now.getTime() - olderThanMs);
  let after: { createdAt: Date; id: string } | undefined;
  let requeued = 0;
  for (;;) {
    const page: Swept[] = await prisma.spoolRecipient.findMany({
      where: {
        // `storing`: stored, but the attachment bytes may not have been written (process died).
        status: { in: ["pending", "storing"] },
        createdAt: { lt: cutoff },
        ...(after
          ? { OR: [{ createdAt: { gt: after.createdAt } }, { createdAt: after.createdAt, id: { gt: after.id } }] }
          : {}),
      },
      select: { id: true, accountId: true, jobId: true, createdAt: true },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: pageSize,
    });
    if (page.length === 0) break;
    requeued += await requeueMissing(queue, logger, page, volume);
    if (page.length < pageSize) break;
    after = page[page.length - 1];
  }
  if (requeued) logger.warn({ requeued }, "re-queued spooled recipients whose jobs were missing");
  return requeued;
}

type Swept = { id: string; accountId: string; jobId: string | null; createdAt: Date };

/**
 * Queues the jobs of the page's recipients whose job is gone, gives a fresh budget to those BullMQ
 * gave up on, skips the rest; returns how many recipients those jobs carry (of this page).
 */
async function requeueMissing(
  queue: TypedQueue<"inbound">,
  logger: Logger,
  rows: Swept[],
  volume: AccountVolume,
): Promise<number> {
  const jobs = new Map<string, { accountId: string; n: number }>();
  for (const r of rows) {
    const job = jobs.get(r.jobId ?? r.id) ?? { accountId: r.accountId, n: 0 };
    job.n += 1;
    jobs.set(r.jobId ?? r.id, job);
  }
  const ids = [...jobs.keys()];
  // Issued together, so ioredis writes them back to back: about one round trip for the page.
  const states = await Promise.all(ids.map((id) => queue.getJobState(id).catch((err: Error) => err)));
  let requeued = 0;
  for (const [i, id] of ids.entries()) {
    const { accountId, n } = jobs.get(id) as { accountId: string; n: number };
    const state = states[i];
    try {
      if (state instanceof Error) throw state;
      if (state === "failed") {
        // BullMQ gave up on it (its attempts ran out, e.g. while Postgres was down): a fresh budget.
        await (await queue.getJob(id))?.retry("failed", { resetAttemptsMade: true });
      } else if (state === "unknown") {
        await enqueue(queue, "inbound", { spoolRecipientId: id }, { jobId: id, priority: volume.next(accountId, n) });
      } else continue; // waiting, prioritized, delayed, active…: still there
      requeued += n;
    } catch (err) {
      // One recipient (e.g. retried by another sweeper a moment ago) must not stop the pass.
      logger.warn({ spoolRecipientId: id, err: (err as Error).message }, "could not re-queue recipient");
    }
  }
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
