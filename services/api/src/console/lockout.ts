import { AppError, lockoutMs, signInEmailHash, signInFailureKey } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";

/**
 * Sign-in lockout per email AND client address (console/sign-in.ts uses it). Counting per member
 * alone let anyone keep any member out by guessing wrong once per lock period, from anywhere; now
 * a wrong guess from one address locks that email at that address only, and the member signs in
 * from theirs. Unknown emails are counted exactly like known ones (a row per typed email), so the
 * fifth wrong try answers the same 429 whether or not the email is a member: no enumeration.
 *
 * Rows hold hashes only (the typed email may be a password typed in the wrong field), live in
 * Postgres like the member (every replica sees one count; sign-in never depends on Redis), and a
 * row whose last failure is older than FAILURE_MEMORY_MS starts over and is deleted on a later
 * failure (see `recordFailure`).
 */
export const FAILURE_MEMORY_MS = 24 * 60 * 60 * 1000;

const keyOf = signInFailureKey;

export function lockedError(until: Date, now: Date): AppError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  return new AppError("rate_limited", `Too many failed sign-ins; try again in ${seconds} s`, {
    "Retry-After": String(seconds),
  });
}

export type Lockout = {
  /** When this email is locked at this address, until when. */
  lockedUntil(email: string, addressGroup: string, now: Date): Promise<Date | null>;
  /** Counts one failure; returns the lock it starts, if any. */
  recordFailure(email: string, addressGroup: string, now: Date): Promise<Date | null>;
  /** A successful sign-in forgets this address's failures for the email. */
  clear(email: string, addressGroup: string): Promise<void>;
};

export function lockout(prisma: PrismaClient): Lockout {
  return {
    async lockedUntil(email, group, now) {
      const row = await prisma.signInFailure.findUnique({
        where: { key: keyOf(email, group) },
        select: { lockedUntil: true },
      });
      return row?.lockedUntil && row.lockedUntil > now ? row.lockedUntil : null;
    },
    async recordFailure(email, group, now) {
      const forgetBefore = new Date(now.getTime() - FAILURE_MEMORY_MS);
      // One statement, atomic across replicas: a stale row starts again at 1.
      const [row] = await prisma.$queryRaw<{ failures: number }[]>`
        INSERT INTO sign_in_failures (key, "emailHash", failures, "lastFailureAt")
        VALUES (${keyOf(email, group)}, ${signInEmailHash(email)}, 1, ${now})
        ON CONFLICT (key) DO UPDATE SET
          failures = CASE WHEN sign_in_failures."lastFailureAt" < ${forgetBefore} THEN 1
                          ELSE sign_in_failures.failures + 1 END,
          "lastFailureAt" = EXCLUDED."lastFailureAt"
        RETURNING failures`;
      // Rows nobody has failed on for a day are forgotten; the index makes this cheap when there are none.
      await prisma.signInFailure.deleteMany({ where: { lastFailureAt: { lt: forgetBefore } } });
      const wait = lockoutMs(row?.failures ?? 1);
      if (wait === 0) return null;
      const until = new Date(now.getTime() + wait);
      await prisma.signInFailure.update({ where: { key: keyOf(email, group) }, data: { lockedUntil: until } });
      return until;
    },
    async clear(email, group) {
      await prisma.signInFailure.deleteMany({ where: { key: keyOf(email, group) } });
    },
  };
}

/** A new password (set-password link) lifts every lock of the email, at every address. */
export async function liftLockouts(prisma: PrismaClient, email: string): Promise<void> {
  await prisma.signInFailure.deleteMany({ where: { emailHash: signInEmailHash(email) } });
}
