import type { Queryable } from "@mailroom/db";
import type { Logger } from "@mailroom/log";

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

/** Runs the purge at start and then every `everyMs`; returns a stop function. */
export function startStagingPurge(db: Queryable, logger: Logger, staleAfterMs: number, everyMs: number): () => void {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      const n = await purgeStaleChunks(db, staleAfterMs);
      if (n) logger.info({ slices: n }, "purged DATA slices of unfinished messages");
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "could not purge stale DATA slices");
    } finally {
      running = false;
    }
  };
  void run();
  const timer = setInterval(() => void run(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
