import { createHash } from "node:crypto";
import { monthKey } from "@mailroom/core";
import { newId, type PrismaClient, poolOf, withTransaction } from "@mailroom/db";
import { enqueue, type Queue } from "@mailroom/queues";
import type { Route } from "./recipients.ts";

export type SpoolInput = {
  raw: Buffer;
  mailFrom: string;
  remoteIp: string | null;
  helo: string | null;
  routes: Route[];
};

/**
 * Makes an accepted message durable: the raw bytes, one row per recipient and the usage count in one
 * Postgres transaction, then one `inbound` job per recipient. Only when all of that has succeeded
 * may SMTP answer 250. If the jobs cannot be queued, the rows are removed again and the caller
 * answers 451, so the sender retries and nothing is left half-written.
 */
export async function spoolMessage(
  prisma: PrismaClient,
  queue: Queue,
  input: SpoolInput,
  now = new Date(),
): Promise<string> {
  const spoolId = newId("spool");
  const recipients = input.routes.map((r) => ({ id: newId("spoolRecipient"), ...r }));
  const perAccount = new Map<string, number>();
  for (const r of recipients) perAccount.set(r.accountId, (perAccount.get(r.accountId) ?? 0) + 1);
  const month = monthKey(now);

  // Plain SQL on node-postgres, not Prisma: the raw bytes go out as one binary parameter instead of
  // being copied and re-encoded several times (see packages/db/src/blobs.ts).
  await withTransaction(poolOf(prisma), async (db) => {
    await db.query(
      `INSERT INTO spooled_messages (id, "mailFrom", "remoteIp", helo, size, sha256, raw, "receivedAt")
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        spoolId,
        input.mailFrom,
        input.remoteIp,
        input.helo,
        input.raw.length,
        createHash("sha256").update(input.raw).digest("hex"),
        input.raw,
        now,
      ],
    );
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
