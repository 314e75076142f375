import { withTransaction } from "@mailroom/db";
import type pg from "pg";
import { type ByteRef, type ByteStore, postgresByteStore } from "./byte-store.ts";

const DAY_MS = 86_400_000;

export type RetentionStats = {
  accounts: number;
  emails: number;
  attachments: number;
  rawMessages: number;
  deliveries: number;
  deliveryAttempts: number;
  threads: number;
  blocks: number;
};

export const emptyStats = (): RetentionStats => ({
  accounts: 0,
  emails: 0,
  attachments: 0,
  rawMessages: 0,
  deliveries: 0,
  deliveryAttempts: 0,
  threads: 0,
  blocks: 0,
});

export type PurgeOptions = {
  pool: pg.Pool;
  /** The pass's "now" (injected in tests); each account's cutoff is now − its retentionDays. */
  now: Date;
  /** Rows per batch; each batch is its own short transaction. */
  batchSize: number;
  bytes?: ByteStore;
  /** Called after every committed batch with its table and row count (metrics, tests). */
  onBatch?: (table: "emails" | "block_records", rows: number) => void;
  /** Checked between batches: a shutdown stops the pass at a batch boundary. */
  stopped?: () => boolean;
};

/**
 * Emails the retention pass may delete now. Not yet: an outbound message still waiting for the
 * relay, an email with a delivery still pending or retrying (the dispatcher would load a missing
 * row), and one whose attachments the rule engine is still writing. Those wait for a later pass.
 * SKIP LOCKED: rows another transaction holds are left for the next batch instead of waited for.
 */
const CLAIM_EMAILS = `
SELECT e.id, e."spoolId", e."threadId"
  FROM emails e
 WHERE e."accountId" = $1 AND e."receivedAt" < $2
   AND (e."sendStatus" IS NULL OR e."sendStatus" NOT IN ('queued', 'retrying'))
   AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d."emailId" = e.id AND d.status IN ('pending', 'retrying'))
   AND NOT EXISTS (SELECT 1 FROM spool_recipients r WHERE r.id = e."spoolRecipientId" AND r.status = 'storing')
 ORDER BY e."receivedAt", e.id
 LIMIT $3
   FOR UPDATE OF e SKIP LOCKED`;

/** Raw MIME goes once no email refers to it and no recipient of it is still being processed. */
const DELETE_UNUSED_SPOOLS = `
DELETE FROM spooled_messages s
 WHERE s.id = ANY($1::text[])
   AND NOT EXISTS (SELECT 1 FROM emails e WHERE e."spoolId" = s.id)
   AND NOT EXISTS (SELECT 1 FROM spool_recipients r WHERE r."spoolId" = s.id AND r.status IN ('pending', 'storing'))
RETURNING s.id`;

type Claimed = { id: string; spoolId: string | null; threadId: string };

/** One batch of an account's expired emails with everything that hangs off them; returns emails deleted. */
async function purgeEmailBatch(
  opts: PurgeOptions,
  accountId: string,
  cutoff: Date,
  stats: RetentionStats,
): Promise<number> {
  const bytes = opts.bytes ?? postgresByteStore;
  return withTransaction(opts.pool, async (db) => {
    const { rows } = await db.query<Claimed>(CLAIM_EMAILS, [accountId, cutoff, opts.batchSize]);
    if (rows.length === 0) return 0;
    const ids = rows.map((r) => r.id);
    // Children first and explicitly (not by cascade), so every count is known and each statement
    // touches only rows of this batch.
    const attachments = await db.query<{ id: string; emailId: string; stored: boolean }>(
      `DELETE FROM attachments WHERE "emailId" = ANY($1::text[]) RETURNING id, "emailId", stored`,
      [ids],
    );
    const attempts = await db.query(
      `DELETE FROM delivery_attempts a USING deliveries d WHERE a."deliveryId" = d.id AND d."emailId" = ANY($1::text[])`,
      [ids],
    );
    const deliveries = await db.query(`DELETE FROM deliveries WHERE "emailId" = ANY($1::text[])`, [ids]);
    const emails = await db.query(`DELETE FROM emails WHERE id = ANY($1::text[])`, [ids]);
    const spoolIds = [...new Set(rows.flatMap((r) => (r.spoolId ? [r.spoolId] : [])))];
    const spools = spoolIds.length
      ? await db.query<{ id: string }>(DELETE_UNUSED_SPOOLS, [spoolIds])
      : { rows: [] as { id: string }[] };
    const refs: ByteRef[] = [
      ...spools.rows.map((s): ByteRef => ({ kind: "raw", spoolId: s.id })),
      ...attachments.rows
        .filter((a) => a.stored)
        .map((a): ByteRef => ({ kind: "attachment", attachmentId: a.id, emailId: a.emailId })),
    ];
    if (refs.length) await bytes.delete(refs);
    const threads = await deleteEmptyThreads(db, [...new Set(rows.map((r) => r.threadId))]);
    stats.emails += emails.rowCount ?? 0;
    stats.attachments += attachments.rowCount ?? 0;
    stats.deliveryAttempts += attempts.rowCount ?? 0;
    stats.deliveries += deliveries.rowCount ?? 0;
    stats.rawMessages += spools.rows.length;
    stats.threads += threads;
    return rows.length;
  });
}

/**
 * A thread whose last email went goes too (GET /threads/{id} is 404 for it either way, and lists
 * would show it empty). The rule engine adds a reply to a thread under a key-share lock on it, and
 * deleting the thread would cascade to that reply. So the threads are locked first, in a statement
 * of their own: FOR UPDATE waits for such an insert to commit, and the DELETE after it is a new
 * statement with a new snapshot (READ COMMITTED) that sees the reply and keeps the thread — by the
 * documented snapshot rules, not by how a re-check of a single DELETE's subquery happens to behave.
 */
async function deleteEmptyThreads(db: pg.PoolClient, threadIds: string[]): Promise<number> {
  await db.query(`SELECT id FROM threads WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`, [threadIds]);
  const r = await db.query(
    `DELETE FROM threads t WHERE t.id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM emails e WHERE e."threadId" = t.id)`,
    [threadIds],
  );
  return r.rowCount ?? 0;
}

/** One batch of an account's expired block records, one statement (its own transaction). */
async function purgeBlockBatch(opts: PurgeOptions, accountId: string, cutoff: Date): Promise<number> {
  const r = await opts.pool.query(
    `DELETE FROM block_records WHERE id IN (
       SELECT id FROM block_records WHERE "accountId" = $1 AND "receivedAt" < $2
        ORDER BY "receivedAt", id LIMIT $3 FOR UPDATE SKIP LOCKED)`,
    [accountId, cutoff, opts.batchSize],
  );
  return r.rowCount ?? 0;
}

/** Deletes everything of one account older than `cutoff`, batch by batch. */
export async function purgeAccount(
  opts: PurgeOptions,
  accountId: string,
  cutoff: Date,
  stats: RetentionStats = emptyStats(),
): Promise<RetentionStats> {
  for (let n = opts.batchSize; n === opts.batchSize && !opts.stopped?.(); ) {
    n = await purgeEmailBatch(opts, accountId, cutoff, stats);
    if (n) opts.onBatch?.("emails", n);
  }
  for (let n = opts.batchSize; n === opts.batchSize && !opts.stopped?.(); ) {
    n = await purgeBlockBatch(opts, accountId, cutoff);
    stats.blocks += n;
    if (n) opts.onBatch?.("block_records", n);
  }
  return stats;
}

const ACCOUNT_PAGE = 500;

/** One retention pass over every account with a retention period (null: kept forever, skipped). */
export async function purgeExpired(opts: PurgeOptions): Promise<RetentionStats> {
  const stats = emptyStats();
  let after = "";
  for (;;) {
    const { rows } = await opts.pool.query<{ id: string; retentionDays: number }>(
      `SELECT id, "retentionDays" FROM accounts WHERE "retentionDays" IS NOT NULL AND id > $1 ORDER BY id LIMIT $2`,
      [after, ACCOUNT_PAGE],
    );
    for (const a of rows) {
      if (opts.stopped?.()) return stats;
      await purgeAccount(opts, a.id, new Date(opts.now.getTime() - a.retentionDays * DAY_MS), stats);
      stats.accounts++;
    }
    if (rows.length < ACCOUNT_PAGE) return stats;
    after = (rows[rows.length - 1] as { id: string }).id;
  }
}
