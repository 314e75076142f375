import { randomInt } from "node:crypto";
import type { Queryable } from "@mailroom/db";

/**
 * The monthly usage count in escrow shards (issue 13, migration usage_shards). One row per account
 * and month was updated by every accepting transaction, so at 20 sessions they queued on its lock
 * for the length of each commit. Now each acceptance adds to one of USAGE_SHARDS rows, picked at
 * random among those nobody holds. Exactness comes from escrow: a shard counts at most its `cap`,
 * and the caps add up to what the allotment leaves, so however many transactions run at once the
 * total cannot pass the allotment. When no shard has room for a message (or the caps were set for
 * another allotment: a new month or a plan change), one transaction locks all of the account's
 * shards, counts exactly, and spreads what is left as fresh caps.
 */
export const USAGE_SHARDS = 32;

/** The account's allotment is used up: the accepting transaction rolls back and DATA gets 452. */
export class OverAllotment extends Error {
  constructor(readonly accountId: string) {
    super(`account ${accountId} is over its monthly allotment`);
  }
}

/** What one acceptance took: `n` counted on `shard`. */
export type Claim = { accountId: string; month: string; shard: number; n: number };

/** `allotment` null: no allotment (counted, never refused), so no caps either. */
export type ClaimRequest = { accountId: string; month: string; n: number; allotment: number | null };

/**
 * Adds n to a shard with room for it that nobody holds (SKIP LOCKED: it never waits); parameters
 * $1 account, $2 month, $3 n, $4 allotment (null: none), $5 a random start so that concurrent
 * sessions spread over the shards. Returns the shard, or no row.
 */
export const CLAIM_FREE_SHARD = `
  UPDATE usage_shards s SET received = s.received + $3::int
   WHERE (s."accountId", s.month, s.shard) = (
     SELECT "accountId", month, shard FROM usage_shards
      WHERE "accountId" = $1 AND month = $2
        AND ($4::int IS NULL OR (allotment = $4::int AND received + $3::int <= cap))
      ORDER BY (shard + $5::int) % ${USAGE_SHARDS}
      LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING s.shard`;

/**
 * CLAIM_FREE_SHARD for several accounts in one statement (a batch, accept-batch.ts), as two CTEs to
 * put after a WITH; `claimed` holds one row (accountId, shard) per account that got a shard with
 * room, none for an account that did not (its messages then settle alone, through claim). $1
 * accounts, $2 n, $3 allotments (null: none), $4 random starts, as arrays, $5 the month. Never waits.
 * The pick is MATERIALIZED, i.e. run once: joined into the UPDATE directly, it could be re-run for
 * each shard row, and each run, skipping the rows this statement already took, would count again.
 */
export const CLAIM_FREE_SHARDS = `
  claim_pick AS MATERIALIZED (
    SELECT r."accountId", r.n, f.shard
      FROM unnest($1::text[], $2::int[], $3::int[], $4::int[]) AS r("accountId", n, allotment, start)
     CROSS JOIN LATERAL (
       SELECT u.shard FROM usage_shards u
        WHERE u."accountId" = r."accountId" AND u.month = $5
          AND (r.allotment IS NULL OR (u.allotment = r.allotment AND u.received + r.n <= u.cap))
        ORDER BY (u.shard + r.start) % ${USAGE_SHARDS}
        LIMIT 1 FOR UPDATE SKIP LOCKED) f),
  claimed AS (
    UPDATE usage_shards s SET received = s.received + p.n FROM claim_pick p
     WHERE s."accountId" = p."accountId" AND s.month = $5 AND s.shard = p.shard
    RETURNING s."accountId", s.shard)`;

export const claimParams = (r: ClaimRequest, start = randomInt(USAGE_SHARDS)): unknown[] => [
  r.accountId,
  r.month,
  r.n,
  r.allotment,
  start,
];

/**
 * Counts one account's share of a message inside the caller's transaction (`db` is its client), or
 * throws OverAllotment: a free shard with room if there is one (unless the caller just found none),
 * else settle(). The attempt runs under a savepoint that is rolled back when it finds nothing: a
 * shard it locked and then found full (updated meanwhile) would otherwise stay locked, and a
 * settling transaction holding one shard out of order can deadlock with another.
 */
export async function claim(db: Queryable, r: ClaimRequest, tryFreeShard = true): Promise<Claim> {
  if (tryFreeShard) {
    await db.query("SAVEPOINT free_shard");
    const got = await db.query<{ shard: number }>(CLAIM_FREE_SHARD, claimParams(r));
    const shard = got.rows[0]?.shard;
    if (shard !== undefined) return { accountId: r.accountId, month: r.month, shard, n: r.n };
    await db.query("ROLLBACK TO SAVEPOINT free_shard");
  }
  return settle(db, r);
}

/**
 * The exact path: creates the account's shards for the month if missing, locks them all (in shard
 * order, as every settling transaction does), counts, adds n to the least-used shard if the
 * allotment allows, and hands out what is left as caps, evenly. Transactions holding a shard finish
 * first (the lock waits for them), so the count includes every acceptance that will ever commit.
 */
async function settle(db: Queryable, r: ClaimRequest): Promise<Claim> {
  await db.query(
    `INSERT INTO usage_shards ("accountId", month, shard)
     SELECT $1, $2, g FROM generate_series(0, ${USAGE_SHARDS - 1}) AS g ON CONFLICT DO NOTHING`,
    [r.accountId, r.month],
  );
  const locked = await db.query<{ shard: number; received: number; base: number }>(
    `SELECT shard, received,
            COALESCE((SELECT received FROM usage_counters WHERE "accountId" = $1 AND month = $2), 0) AS base
       FROM usage_shards WHERE "accountId" = $1 AND month = $2 ORDER BY shard FOR UPDATE`,
    [r.accountId, r.month],
  );
  const shards = locked.rows.map((row) => ({ shard: row.shard, received: row.received }));
  const base = locked.rows[0]?.base ?? 0;
  const total = base + shards.reduce((sum, s) => sum + s.received, 0);
  if (r.allotment !== null && total + r.n > r.allotment) throw new OverAllotment(r.accountId);

  const target = shards.reduce((a, b) => (b.received < a.received ? b : a));
  target.received += r.n;
  const left = r.allotment === null ? 0 : r.allotment - total - r.n;
  const caps = shards.map((s, i) => s.received + Math.floor(left / shards.length) + (i < left % shards.length ? 1 : 0));
  await db.query(
    `UPDATE usage_shards u SET received = v.received, cap = v.cap, allotment = $3
       FROM unnest($4::int[], $5::int[], $6::int[]) AS v(shard, received, cap)
      WHERE u."accountId" = $1 AND u.month = $2 AND u.shard = v.shard`,
    [r.accountId, r.month, r.allotment, shards.map((s) => s.shard), shards.map((s) => s.received), caps],
  );
  return { accountId: r.accountId, month: r.month, shard: target.shard, n: r.n };
}
