import { createHash } from "node:crypto";
import { newId, type PrismaClient } from "@mailroom/db";
import { enqueue, type Queue } from "@mailroom/queues";
import { monthKey } from "./plans.ts";
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

  await prisma.$transaction(async (tx) => {
    await tx.spooledMessage.create({
      data: {
        id: spoolId,
        mailFrom: input.mailFrom,
        remoteIp: input.remoteIp,
        helo: input.helo,
        size: input.raw.length,
        sha256: createHash("sha256").update(input.raw).digest("hex"),
        raw: new Uint8Array(input.raw),
        receivedAt: now,
      },
    });
    await tx.spoolRecipient.createMany({
      data: recipients.map((r) => ({
        id: r.id,
        spoolId,
        accountId: r.accountId,
        domainId: r.domainId,
        addressId: r.addressId,
        recipient: r.recipient,
        createdAt: now,
      })),
    });
    for (const [accountId, n] of perAccount) {
      await tx.usageCounter.upsert({
        where: { accountId_month: { accountId, month } },
        create: { accountId, month, received: n },
        update: { received: { increment: n } },
      });
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
