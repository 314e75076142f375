import type { DomainModel, PrismaClient } from "@mailroom/db";
import { type DomainPatch, type DomainState, pendingDelayMs } from "./lifecycle.ts";

/** A full domain row; the lifecycle reads only the DomainState part. */
export type DomainRecordRow = DomainModel & DomainState;

/**
 * Claims up to `limit` domains whose check is due, for this replica alone: the row lock with SKIP
 * LOCKED keeps two replicas from taking the same row, and moving `nextCheckAt` forward by `leaseMs`
 * keeps them from taking it again right after the commit. If this process dies mid-check, the lease
 * runs out and another replica picks the domain up.
 */
export async function claimDue(
  prisma: PrismaClient,
  now: Date,
  { limit, leaseMs }: { limit: number; leaseMs: number },
): Promise<DomainRecordRow[]> {
  const lease = new Date(now.getTime() + leaseMs);
  const claimed = await prisma.$queryRaw<{ id: string }[]>`
    UPDATE "domains" AS d SET "nextCheckAt" = ${lease}
    FROM (
      SELECT "id" FROM "domains"
      WHERE "status" IN ('pending', 'verified') AND "nextCheckAt" <= ${now}
      ORDER BY "nextCheckAt"
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ) AS due
    WHERE d."id" = due."id"
    RETURNING d."id"`;
  if (claimed.length === 0) return [];
  return prisma.domain.findMany({ where: { id: { in: claimed.map((c) => c.id) } } });
}

/**
 * Writes a check's outcome only if the domain is still in the state the check started from (same
 * status, same verification window): a concurrent manual check or a new window wins, not this one.
 */
export async function applyPatch(prisma: PrismaClient, d: DomainRecordRow, patch: DomainPatch): Promise<boolean> {
  const r = await prisma.domain.updateMany({
    where: { id: d.id, status: d.status, verifyStartedAt: d.verifyStartedAt },
    data: patch,
  });
  return r.count === 1;
}

/** `failed` → `pending` with a fresh 72 h window and the schedule from its start. No-op otherwise. */
export async function restartWindow(prisma: PrismaClient, id: string, now: Date): Promise<boolean> {
  const r = await prisma.domain.updateMany({
    where: { id, status: "failed" },
    data: {
      status: "pending",
      verifyStartedAt: now,
      checkCount: 0,
      nextCheckAt: new Date(now.getTime() + pendingDelayMs(0)),
      warning: null,
    },
  });
  return r.count === 1;
}
