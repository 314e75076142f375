import { monthKey } from "@mailroom/core";
import { newId, type PrismaClient, poolOf, withTransaction } from "@mailroom/db";
import { enqueue, type Queue } from "@mailroom/queues";
import type { Route } from "./recipients.ts";

/**
 * The message bytes: `staged` slices already in spool_chunks under `spoolId` (see receive.ts),
 * followed by `tail`. `size` and `sha256` cover the whole message.
 */
export type SpoolBody = { spoolId: string; staged: number; tail: Buffer; size: number; sha256: string };

export type SpoolInput = {
  body: SpoolBody;
  mailFrom: string;
  remoteIp: string | null;
  helo: string | null;
  routes: Route[];
};

/**
 * Makes an accepted message durable: the raw bytes, one row per recipient and the usage count in one
 * Postgres transaction, then one `inbound` job per recipient. Only when all of that has succeeded
 * may SMTP answer 250. If the jobs cannot be queued, the rows are removed again and the caller
 * answers 451, so the sender retries and nothing is left half-written. Slices staged while DATA
 * was streaming are joined into spooled_messages.raw and deleted in that same transaction, so the
 * message exists either whole, as a spool row, or not at all.
 */
export async function spoolMessage(
  prisma: PrismaClient,
  queue: Queue,
  input: SpoolInput,
  now = new Date(),
): Promise<string> {
  const { body } = input;
  const spoolId = body.spoolId;
  const recipients = input.routes.map((r) => ({ id: newId("spoolRecipient"), ...r }));
  const perAccount = new Map<string, number>();
  for (const r of recipients) perAccount.set(r.accountId, (perAccount.get(r.accountId) ?? 0) + 1);
  const month = monthKey(now);

  // Plain SQL on node-postgres, not Prisma: the raw bytes go out as one binary parameter instead of
  // being copied and re-encoded several times (see packages/db/src/blobs.ts). Staged slices are
  // joined inside Postgres, so a big message never exists whole in this process.
  try {
    await withTransaction(poolOf(prisma), async (db) => {
      const head = [spoolId, input.mailFrom, input.remoteIp, input.helo, body.size, body.sha256];
      if (body.staged === 0) {
        await db.query(
          `INSERT INTO spooled_messages (id, "mailFrom", "remoteIp", helo, size, sha256, raw, "receivedAt")
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [...head, body.tail, now],
        );
      } else {
        const joined = await db.query<{ n: number }>(
          `INSERT INTO spooled_messages (id, "mailFrom", "remoteIp", helo, size, sha256, raw, "receivedAt")
           SELECT $1, $2, $3, $4, $5, $6, COALESCE(string_agg(data, ''::bytea ORDER BY seq), ''::bytea) || $7::bytea, $8
             FROM spool_chunks WHERE "uploadId" = $1
           RETURNING octet_length(raw) AS n`,
          [...head, body.tail, now],
        );
        // A slice missing (purged as stale, or lost with an unlogged table in a Postgres crash) must
        // not become a shorter message: refuse, and the client retries.
        if (joined.rows[0]?.n !== body.size) {
          throw new Error(`staged DATA of ${spoolId} is incomplete (${joined.rows[0]?.n ?? 0} of ${body.size} bytes)`);
        }
        await db.query(`DELETE FROM spool_chunks WHERE "uploadId" = $1`, [spoolId]);
      }
      for (const r of recipients) {
        await db.query(
          `INSERT INTO spool_recipients (id, "spoolId", "accountId", "domainId", "addressId", recipient, "createdAt")
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [r.id, spoolId, r.accountId, r.domainId, r.addressId, r.recipient, now],
        );
      }
      for (const [accountId, n] of perAccount) {
        await db.query(
          `INSERT INTO usage_counters ("accountId", month, received) VALUES ($1, $2, $3)
           ON CONFLICT ("accountId", month) DO UPDATE SET received = usage_counters.received + EXCLUDED.received`,
          [accountId, month, n],
        );
      }
    });
  } catch (err) {
    // Nothing was committed: the staged slices go too (if Postgres is gone, the purge in
    // staging.ts removes them later).
    if (body.staged) {
      await poolOf(prisma)
        .query(`DELETE FROM spool_chunks WHERE "uploadId" = $1`, [spoolId])
        .catch(() => undefined);
    }
    throw err;
  }

  try {
    for (const r of recipients) {
      await enqueue(queue, "inbound", { spoolRecipientId: r.id }, { jobId: r.id });
    }
  } catch (err) {
    await unspool(prisma, spoolId, perAccount, month).catch(() => undefined);
    throw err;
  }
  return spoolId;
}

async function unspool(prisma: PrismaClient, spoolId: string, perAccount: Map<string, number>, month: string) {
  await prisma.$transaction(async (tx) => {
    await tx.spooledMessage.delete({ where: { id: spoolId } });
    for (const [accountId, n] of perAccount) {
      await tx.usageCounter.update({
        where: { accountId_month: { accountId, month } },
        data: { received: { decrement: n } },
      });
    }
  });
}
