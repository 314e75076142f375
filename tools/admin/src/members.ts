import { hashSecretToken, newSecretToken, SET_PASSWORD_TTL_MS, setPasswordLink, signInEmailHash } from "@mailroom/core";
import { newId, type PrismaClient } from "@mailroom/db";
import { AdminError, type Row } from "./ops.ts";

/**
 * Console members (issue 17). An operator creates a member; the member sets their own password with
 * the one-time link printed here (24 h, one use). The operator never sees or chooses a password.
 */

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function normalizeEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!EMAIL.test(e) || e.length > 254) throw new AdminError(`"${email}" is not an email address`);
  return e;
}

/** A fresh set-password link for `memberId`; earlier unused links stop working. */
async function issueLink(prisma: PrismaClient, memberId: string, consoleUrl: string, now = new Date()) {
  const token = newSecretToken();
  const expiresAt = new Date(now.getTime() + SET_PASSWORD_TTL_MS);
  await prisma.$transaction([
    prisma.memberToken.updateMany({ where: { memberId, usedAt: null }, data: { usedAt: now } }),
    prisma.memberToken.create({
      data: { id: newId("memberToken"), memberId, hash: hashSecretToken(token), expiresAt },
    }),
  ]);
  return { setPasswordUrl: setPasswordLink(consoleUrl, token), expiresAt: expiresAt.toISOString() };
}

export async function createMember(prisma: PrismaClient, accountId: string, email: string, consoleUrl: string) {
  const address = normalizeEmail(email);
  const account = await prisma.account.findUnique({ where: { id: accountId } });
  if (!account) throw new AdminError(`account ${accountId} not found`);
  if (await prisma.member.findUnique({ where: { email: address } })) {
    throw new AdminError(`${address} is already a member (use: members reset-password --email ${address})`);
  }
  const m = await prisma.member.create({ data: { id: newId("member"), accountId, email: address } });
  return { id: m.id, accountId, email: m.email, ...(await issueLink(prisma, m.id, consoleUrl)) };
}

/** A new one-time link for a member who lost theirs or forgot the password; also lifts their lockouts. */
export async function resetPassword(prisma: PrismaClient, email: string, consoleUrl: string) {
  const address = normalizeEmail(email);
  const m = await prisma.member.findUnique({ where: { email: address } });
  if (!m) throw new AdminError(`${address} is not a member`);
  // Every address the email is locked at (the API counts failures per email and client address).
  await prisma.signInFailure.deleteMany({ where: { emailHash: signInEmailHash(address) } });
  return { id: m.id, accountId: m.accountId, email: m.email, ...(await issueLink(prisma, m.id, consoleUrl)) };
}

/** The latest lock of each email that is locked at some address now (the API's per-address lockout). */
async function lockedUntilByEmail(prisma: PrismaClient, emails: string[], now = new Date()) {
  const hashes = new Map(emails.map((e) => [signInEmailHash(e), e]));
  const locks = await prisma.signInFailure.groupBy({
    by: ["emailHash"],
    where: { emailHash: { in: [...hashes.keys()] }, lockedUntil: { gt: now } },
    _max: { lockedUntil: true },
  });
  return new Map(locks.map((l) => [hashes.get(l.emailHash), l._max.lockedUntil]));
}

export async function listMembers(prisma: PrismaClient, accountId: string): Promise<Row[]> {
  const rows = await prisma.member.findMany({ where: { accountId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
  const locked = await lockedUntilByEmail(
    prisma,
    rows.map((m) => m.email),
  );
  return rows.map((m) => ({
    id: m.id,
    email: m.email,
    passwordSet: m.passwordHash !== null,
    // Locked at one address or more (from the one the member uses, they may still sign in).
    lockedUntil: locked.get(m.email)?.toISOString() ?? null,
    lastSignInAt: m.lastSignInAt?.toISOString() ?? null,
    createdAt: m.createdAt.toISOString(),
  }));
}

/** Removes a member: their sessions go with the row (cascade), so the console refuses them at once. */
export async function removeMember(prisma: PrismaClient, email: string) {
  const address = normalizeEmail(email);
  const r = await prisma.member.deleteMany({ where: { email: address } });
  if (r.count === 0) throw new AdminError(`${address} is not a member`);
  return { email: address, removed: true };
}
