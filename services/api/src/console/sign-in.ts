import {
  AppError,
  DUMMY_PASSWORD_HASH,
  hashPassword,
  hashSecretToken,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  verifyPassword,
} from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import { z } from "zod";
import { parse } from "../lib/http.ts";
import { liftLockouts, lockedError, lockout } from "./lockout.ts";

/**
 * Console sign-in and set-password (issue 17). A wrong password and an unknown email take the same
 * steps: one lookup, the same scrypt work (against a dummy hash), one failure counted for that email
 * at that address (lockout.ts), and the same answer — 401, or from the fifth failure 429 with
 * Retry-After — so neither the status, the body, the headers nor the time tells members apart. A
 * locked email at an address answers 429 there, even with the right password, while the member
 * signs in from their own address.
 */

export const signInBody = z.strictObject({
  email: z.string().trim().toLowerCase().min(3).max(254),
  password: z.string().min(1).max(PASSWORD_MAX_LENGTH),
});

export const setPasswordBody = z.strictObject({
  token: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "must be the token from the set-password link"),
  password: z
    .string()
    .min(PASSWORD_MIN_LENGTH, `must be at least ${PASSWORD_MIN_LENGTH} characters`)
    .max(PASSWORD_MAX_LENGTH, `must be at most ${PASSWORD_MAX_LENGTH} characters`),
});

const WRONG = "Wrong email or password";

/** The member the credentials name, or a 401/429; `addressGroup` is the client's (client-address.ts). */
export async function checkCredentials(prisma: PrismaClient, body: unknown, addressGroup: string, now = new Date()) {
  const { email, password } = parse(signInBody, body);
  const locks = lockout(prisma);
  const [member, lockedUntil] = await Promise.all([
    prisma.member.findUnique({ where: { email } }),
    locks.lockedUntil(email, addressGroup, now),
  ]);
  if (lockedUntil) throw lockedError(lockedUntil, now);
  const ok = await verifyPassword(password, member?.passwordHash ?? DUMMY_PASSWORD_HASH);
  if (!member?.passwordHash || !ok) {
    const until = await locks.recordFailure(email, addressGroup, now);
    throw until ? lockedError(until, now) : new AppError("unauthorized", WRONG);
  }
  await Promise.all([
    locks.clear(email, addressGroup),
    prisma.member.update({ where: { id: member.id }, data: { lastSignInAt: now } }),
  ]);
  return member;
}

/**
 * Consumes a one-time link: sets the password, ends every session the member had (a reset must
 * lock out whoever knew the old password) and lifts the email's lockouts at every address. The
 * member signs in afterwards.
 */
export async function setPasswordWithToken(prisma: PrismaClient, body: unknown, now = new Date()) {
  const { token, password } = parse(setPasswordBody, body);
  const row = await prisma.memberToken.findUnique({ where: { hash: hashSecretToken(token) } });
  if (!row || row.usedAt || row.expiresAt <= now) {
    throw new AppError("gone", "This link has expired or was already used; ask your operator for a new one");
  }
  // Claimed with a guarded update, so two concurrent uses of one link set a password once.
  const claimed = await prisma.memberToken.updateMany({ where: { id: row.id, usedAt: null }, data: { usedAt: now } });
  if (claimed.count === 0) throw new AppError("gone", "This link was already used");
  const passwordHash = await hashPassword(password);
  const member = await prisma.member.update({ where: { id: row.memberId }, data: { passwordHash } });
  await prisma.consoleSession.deleteMany({ where: { memberId: member.id } });
  await liftLockouts(prisma, member.email);
  return { email: member.email };
}
