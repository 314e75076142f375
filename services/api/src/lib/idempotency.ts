import { createHash } from "node:crypto";
import { AppError, invalid } from "@mailroom/core";
import { Prisma, type PrismaClient } from "@mailroom/db";

/** How long a key's first response is replayed (Stripe's window). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type Outcome = { status: number; body: unknown; replayed: boolean };

/** `Idempotency-Key`: 1 to 255 visible ASCII characters; absent means not idempotent. */
export function idempotencyKeyOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const key = header.trim();
  if (!KEY_PATTERN.test(key)) throw invalid("Idempotency-Key: must be 1 to 255 visible ASCII characters");
  return key;
}

/** Identifies "the same request": method, path and body. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash("sha256")
    .update(`${method} ${path}\n`)
    .update(JSON.stringify(body ?? null))
    .digest("hex");
}

async function replay(
  prisma: PrismaClient,
  accountId: string,
  key: string,
  fingerprint: string,
  now: Date,
): Promise<Outcome | null> {
  const row = await prisma.idempotencyKey.findUnique({ where: { accountId_key: { accountId, key } } });
  if (!row) return null;
  if (row.createdAt.getTime() < now.getTime() - IDEMPOTENCY_TTL_MS) {
    await prisma.idempotencyKey.deleteMany({ where: { accountId, key, createdAt: row.createdAt } });
    return null;
  }
  if (row.requestHash !== fingerprint) {
    throw new AppError("conflict", "Idempotency-Key: already used with a different request");
  }
  return { status: row.status, body: row.response, replayed: true };
}

/**
 * Runs `create` once per (account, key). The key row is written in the same transaction as the
 * resource, so a repeat either sees both or neither; a concurrent repeat waits on the key's primary
 * key, fails with a unique violation, and then replays the committed response.
 */
export async function runIdempotent(
  prisma: PrismaClient,
  accountId: string,
  key: string | null,
  fingerprint: string,
  create: (tx: Prisma.TransactionClient) => Promise<{ status: number; body: unknown }>,
): Promise<Outcome> {
  const now = new Date();
  if (!key) {
    const r = await prisma.$transaction((tx) => create(tx));
    return { ...r, replayed: false };
  }
  const earlier = await replay(prisma, accountId, key, fingerprint, now);
  if (earlier) return earlier;
  try {
    const r = await prisma.$transaction(async (tx) => {
      const out = await create(tx);
      await tx.idempotencyKey.create({
        data: {
          accountId,
          key,
          requestHash: fingerprint,
          status: out.status,
          response: out.body as Prisma.InputJsonValue,
        },
      });
      return out;
    });
    return { ...r, replayed: false };
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
      const again = await replay(prisma, accountId, key, fingerprint, now);
      if (again) return again;
    }
    throw err;
  }
}
