import {
  AppError,
  DUMMY_PASSWORD_HASH,
  hashPassword,
  hashSecretToken,
  lockoutMs,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  verifyPassword,
} from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import { z } from "zod";
import { parse } from "../lib/http.ts";

/**
 * Console sign-in and set-password (issue 17). A wrong password and an unknown email answer the
 * same 401 after the same scrypt work. Consecutive failures lock the member out for a doubling
 * while (lockoutMs); a locked member gets 429 with Retry-After, even with the right password, so
 * guessing cannot go on at full speed.
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

function locked(until: Date, now: Date): AppError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  return new AppError("rate_limited", `Too many failed sign-ins; try again in ${seconds} s`, {
    "Retry-After": String(seconds),
  });
}

/** The member the credentials name, or a 401/429. */
export async function checkCredentials(prisma: PrismaClient, body: unknown, now = new Date()) {
  const { email, password } = parse(signInBody, body);
  const member = await prisma.member.findUnique({ where: { email } });
  if (member?.lockedUntil && member.lockedUntil > now) throw locked(member.lockedUntil, now);
  const ok = await verifyPassword(password, member?.passwordHash ?? DUMMY_PASSWORD_HASH);
  if (!member?.passwordHash) throw new AppError("unauthorized", WRONG);
  if (!ok) {
    // Counted in the database (atomic increment), so every API replica sees the same count.
    const { failedSignIns } = await prisma.member.update({
      where: { id: member.id },
      data: { failedSignIns: { increment: 1 } },
      select: { failedSignIns: true },
    });
    const wait = lockoutMs(failedSignIns);
    if (wait > 0) {
      const until = new Date(now.getTime() + wait);
      await prisma.member.update({ where: { id: member.id }, data: { lockedUntil: until } });
      throw locked(until, now);
    }
    throw new AppError("unauthorized", WRONG);
  }
  await prisma.member.update({
    where: { id: member.id },
    data: { failedSignIns: 0, lockedUntil: null, lastSignInAt: now },
  });
  return member;
}

/**
 * Consumes a one-time link: sets the password, ends every session the member had (a reset must
 * lock out whoever knew the old password) and lifts a lockout. The member signs in afterwards.
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
  const member = await prisma.member.update({
    where: { id: row.memberId },
    data: { passwordHash, failedSignIns: 0, lockedUntil: null },
  });
  await prisma.consoleSession.deleteMany({ where: { memberId: member.id } });
  return { email: member.email };
}
