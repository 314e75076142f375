import { type PrismaClient, poolOf } from "@mailroom/db";
import { retryFor } from "@mailroom/queues";
import { type LoadedRecipient, loadJob, loadRecipient } from "./load.ts";
import { isDependencyOutage } from "./outage.ts";
import { type ProcessDeps, type ProcessResult, processRecipient, RAW_WITH_LOAD_BYTES } from "./process.ts";
import { pgSafeText } from "./sanitize.ts";

/** Tries a recipient gets before it is stored as PROCESSING_FAILED. */
export const DEFAULT_MAX_TRIES = 5;

/**
 * processRecipient with a bounded number of tries, so that a poison message (one whose processing
 * throws every time: a value Postgres refuses, a bug, a process that dies on it) reaches a terminal
 * state instead of staying `pending` for ever and crowding out every other message.
 *
 * Tries are counted in Postgres (`spool_recipients.attempts`), so the budget survives Redis losing
 * the job, and counted when a try begins, so a message that kills the process is counted too. A try
 * that failed because a dependency was unreachable (outage.ts) is given back: an outage delays mail
 * and never turns it into PROCESSING_FAILED. When the count reaches the budget, the message is
 * stored from its raw bytes with PROCESSING_FAILED verdicts and gets its deliveries like any mail.
 * Backoff between tries is the inbound job's (exponential from 2 s: 5 tries take ~30 s); a job
 * lost in between is re-queued by the sweeper and continues the same count.
 */
export async function processWithBudget(
  deps: ProcessDeps,
  spoolRecipientId: string,
  maxTries = DEFAULT_MAX_TRIES,
): Promise<ProcessResult> {
  // Counts the try in the statement that loads the recipient (load.ts). Throws while Postgres is
  // unreachable: nothing is counted then.
  const loaded = await loadRecipient(poolOf(deps.prisma), spoolRecipientId, {
    countTry: true,
    rawUpTo: RAW_WITH_LOAD_BYTES,
  });
  return withinBudget(deps, spoolRecipientId, loaded, maxTries);
}

/** Raw bytes that come with one job's load statement at most (the rest are read under the memory budget). */
const RAW_WITH_JOB_LOAD_BYTES = 1024 * 1024;

/** Where each recipient's outcome and processing time go (metrics.ts), as it ends. */
export type Observer = { processed(result: ProcessResult, seconds: number): void; failed(seconds: number): void };

/**
 * processWithBudget for every recipient one `inbound` job carries (the ingest groups an accept
 * group's recipients of one account into one job): loaded, and their tries counted, in one
 * statement, then processed side by side, each with its own budget exactly as alone. Resolves with
 * an error when a recipient failed (the job is to fail and be retried; those that succeeded are no
 * longer pending and take the skip path next time): a failure that counted is preferred over an
 * outage, so the retry goes to the retry lane.
 */
export async function processJob(
  deps: ProcessDeps,
  jobId: string,
  maxTries = DEFAULT_MAX_TRIES,
  observer?: Observer,
): Promise<unknown> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  let members: LoadedRecipient[];
  try {
    members = await loadJob(poolOf(deps.prisma), jobId, {
      countTry: true,
      rawUpTo: RAW_WITH_LOAD_BYTES,
      rawTotal: RAW_WITH_JOB_LOAD_BYTES,
    });
  } catch (err) {
    observer?.failed(seconds());
    return err;
  }
  if (members.length === 0)
    observer?.processed({ outcome: "skipped", reason: "recipient no longer spooled" }, seconds());
  const errors: unknown[] = [];
  await Promise.all(
    members.map((m) =>
      withinBudget(deps, m.id, m, maxTries).then(
        (result) => observer?.processed(result, seconds()),
        (err: unknown) => {
          observer?.failed(seconds());
          errors.push(err);
        },
      ),
    ),
  );
  return errors.find((e) => !isDependencyOutage(e)) ?? errors[0];
}

/** The budget around one loaded recipient (its try already counted, or not pending). */
async function withinBudget(
  deps: ProcessDeps,
  spoolRecipientId: string,
  loaded: LoadedRecipient | null,
  maxTries: number,
): Promise<ProcessResult> {
  const tries = loaded?.tries ?? null;
  // Not pending (stored, storing, blocked, …) or gone: the skip/resume path, no budget involved.
  if (tries === null) return processRecipient(deps, spoolRecipientId, {}, loaded);
  if (tries > maxTries) return storeAsFailed(deps, spoolRecipientId, "processing budget used up");
  try {
    return await processRecipient(deps, spoolRecipientId, {}, loaded);
  } catch (err) {
    if (isDependencyOutage(err)) {
      await giveBack(deps.prisma, spoolRecipientId).catch(() => undefined);
      throw err;
    }
    const reason = errorText(err);
    deps.logger.warn({ spoolRecipientId, tries, maxTries, err: reason }, "processing failed");
    await recordError(deps.prisma, spoolRecipientId, reason);
    if (tries >= maxTries) return storeAsFailed(deps, spoolRecipientId, reason);
    throw err;
  }
}

/**
 * Postgres may still be unreachable here (it is what failed): keep trying for a while, so that a
 * cut in the middle of a try does not count. If it stays down the try stays counted; it takes five
 * such cuts, each in the middle of a try, to make an outage look like a poison message.
 */
async function giveBack(prisma: PrismaClient, id: string): Promise<void> {
  await retryFor(
    () =>
      prisma.$executeRaw`UPDATE spool_recipients SET attempts = greatest(attempts - 1, 0)
                          WHERE id = ${id} AND status = 'pending'`,
    { deadlineMs: 15_000, firstDelayMs: 200 },
  );
}

async function recordError(prisma: PrismaClient, id: string, reason: string): Promise<void> {
  await prisma.spoolRecipient.update({ where: { id }, data: { lastError: reason } }).catch(() => undefined);
}

/** Poison past its budget: stored from the raw bytes, with a few safe headers, else with none. */
async function storeAsFailed(deps: ProcessDeps, spoolRecipientId: string, reason: string): Promise<ProcessResult> {
  deps.logger.error(
    { spoolRecipientId, reason },
    "processing budget used up; storing the raw message as PROCESSING_FAILED",
  );
  try {
    return await processRecipient(deps, spoolRecipientId, { failed: "headers" });
  } catch (err) {
    if (isDependencyOutage(err)) throw err;
    const again = errorText(err);
    deps.logger.error({ spoolRecipientId, err: again }, "could not store with its headers; storing it without");
    await recordError(deps.prisma, spoolRecipientId, again);
    return processRecipient(deps, spoolRecipientId, { failed: "empty" });
  }
}

/** Prisma's messages quote our source around the failing call; the last lines say what failed. */
function errorText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const lines = message.trim().split("\n");
  return pgSafeText(lines.slice(-3).join(" ").trim()).slice(0, 1000);
}
