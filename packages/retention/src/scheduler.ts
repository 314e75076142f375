import { checkout } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { dependencyErrors } from "@mailroom/observability";
import { type Periodic, startPeriodic } from "@mailroom/runtime";
import type pg from "pg";
import type { ByteStore } from "./byte-store.ts";
import { type PurgeOptions, purgeExpired, type RetentionStats } from "./purge.ts";

/**
 * Session-level advisory lock held for a whole pass: with several domain-verifier replicas, one
 * pass runs at a time and the others skip theirs. The lock lives on one pooled connection and goes
 * with it if the process dies. The number is arbitrary but fixed (ASCII "mailrret").
 */
export const RETENTION_LOCK_KEY = 0x6d61696c72726574n;

export type RetentionOptions = {
  pool: pg.Pool;
  logger: Logger;
  batchSize: number;
  intervalMs: number;
  now?: () => Date;
  bytes?: ByteStore;
  onBatch?: PurgeOptions["onBatch"];
};

/** What one pass did; `skipped` when another process held the lock. */
export type PassResult = { skipped: true } | { skipped: false; stats: RetentionStats };

/** One pass under the advisory lock. */
export async function runRetentionPass(
  opts: RetentionOptions,
  stopped: () => boolean = () => false,
): Promise<PassResult> {
  // checkout: the lock holder sits idle through the whole pass; a drop meanwhile must fail the pass, not the process.
  const { client: lockHolder, lost, release } = await checkout(opts.pool);
  let unlockFailed: Error | undefined;
  try {
    const { rows } = await lockHolder.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1) AS ok", [
      RETENTION_LOCK_KEY.toString(),
    ]);
    if (!rows[0]?.ok) return { skipped: true };
    try {
      const stats = await purgeExpired({
        pool: opts.pool,
        now: (opts.now ?? (() => new Date()))(),
        batchSize: opts.batchSize,
        ...(opts.bytes ? { bytes: opts.bytes } : {}),
        ...(opts.onBatch ? { onBatch: opts.onBatch } : {}),
        // The lock went with its connection: another replica may start a pass now, so this one stops.
        stopped: () => stopped() || lost() !== undefined,
      });
      const gone = lost();
      if (gone) throw gone;
      return { skipped: false, stats };
    } finally {
      // A session that may still hold the lock is closed (which releases it), not pooled.
      if (!lost()) {
        await lockHolder.query("SELECT pg_advisory_unlock($1)", [RETENTION_LOCK_KEY.toString()]).catch((err: Error) => {
          unlockFailed = err;
          throw err;
        });
      }
    }
  } finally {
    release(unlockFailed);
  }
}

export type RetentionJob = Periodic<PassResult>;

/**
 * Runs a pass now and then every `intervalMs`. Missed passes are not made up: each pass deletes
 * everything expired at its own "now". close() stops at the next batch boundary.
 */
export function startRetention(opts: RetentionOptions): RetentionJob {
  return startPeriodic({
    run: (stopped) => runRetentionPass(opts, stopped),
    intervalMs: opts.intervalMs,
    onResult: (result) => {
      if (result.skipped) return;
      const { accounts, ...deleted } = result.stats;
      if (Object.values(deleted).some((n) => n > 0)) {
        opts.logger.info({ accounts, ...deleted }, "retention pass deleted expired mail");
      }
    },
    // Postgres down: one line per window, not one per pass.
    onError: (err) => dependencyErrors(opts.logger).report("postgres", err, { source: "retention pass" }),
  });
}
