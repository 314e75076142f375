import type { Queryable } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type Periodic, startPeriodic } from "@mailroom/runtime";

/**
 * Deletes DATA slices (spool_chunks) of uploads that have written nothing for `staleAfterMs`: a
 * connection that ended normally or went away deletes its own, so these are left by an ingest that
 * crashed mid-DATA, or by a cleanup that Postgres refused. They were never accepted mail (the
 * sweepers only look at spooled_messages), so deleting them loses nothing. Were a live upload ever
 * this slow, its acceptance finds the bytes missing and answers 451 (spool.ts), never a shorter
 * message. Safe to run from every ingest replica at once.
 */
export async function purgeStaleChunks(db: Queryable, staleAfterMs: number): Promise<number> {
  const r = await db.query(
    `DELETE FROM spool_chunks WHERE "uploadId" IN (
       SELECT "uploadId" FROM spool_chunks GROUP BY "uploadId"
       HAVING max("createdAt") < now() - make_interval(secs => $1::double precision / 1000))`,
    [staleAfterMs],
  );
  return r.rowCount ?? 0;
}

/** Runs the purge at start and then every `everyMs` (never two at once); close() awaits one in flight. */
export function startStagingPurge(
  db: Queryable,
  logger: Logger,
  staleAfterMs: number,
  everyMs: number,
): Periodic<number> {
  return startPeriodic({
    run: () => purgeStaleChunks(db, staleAfterMs),
    intervalMs: everyMs,
    onResult: (n) => {
      if (n) logger.info({ slices: n }, "purged DATA slices of unfinished messages");
    },
    onError: (err) => logger.warn({ err: (err as Error).message }, "could not purge stale DATA slices"),
  });
}
