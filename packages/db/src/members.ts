import { hashSecretToken, newSecretToken, SET_PASSWORD_TTL_MS, setPasswordLink, signInEmailHash } from "@mailroom/core";
import type { PrismaClient } from "./client.ts";
import { newId } from "./ids.ts";

/**
 * Console members as both the admin CLI and the console manage them: a member is added with a
 * one-time set-password link (24 h, one use; only its hash is stored), listed with their lockouts,
 * and removed (their sessions go with the row). Callers word the refusals (CLI: AdminError, API:
 * AppError); these functions only report them.
 */

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Lower-cased and trimmed, or null when it is not an email address. */
export function normalizeMemberEmail(email: string): string | null {
  const e = email.trim().toLowerCase();
  return EMAIL.test(e) && e.length <= 254 ? e : null;
}

/** A fresh set-password link for `memberId`; earlier unused links stop working. */
export async function issueSetPasswordLink(
  prisma: PrismaClient,
  memberId: string,
  consoleUrl: string,
  now = new Date(),
) {
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

/** A new member of `accountId` with a set-password link, or `taken` when the email is a member already. */
export async function addMember(prisma: PrismaClient, accountId: string, email: string, consoleUrl: string) {
  if (await prisma.member.findUnique({ where: { email } })) return { taken: true as const };
  const m = await prisma.member
    .create({ data: { id: newId("member"), accountId, email } })
    .catch((err: { code?: string }) => {
      // Two invitations of one email at once: the unique index keeps one.
      if (err.code === "P2002") return null;
      throw err;
    });
  if (!m) return { taken: true as const };
  return {
    taken: false as const,
    id: m.id,
    accountId,
    email: m.email,
    ...(await issueSetPasswordLink(prisma, m.id, consoleUrl)),
  };
}

/** The latest lock of each email that is locked at some address now (the API's per-address lockout). */
async function lockedUntilByEmail(prisma: PrismaClient, emails: string[], now: Date) {
  const hashes = new Map(emails.map((e) => [signInEmailHash(e), e]));
  const locks = await prisma.signInFailure.groupBy({
    by: ["emailHash"],
    where: { emailHash: { in: [...hashes.keys()] }, lockedUntil: { gt: now } },
    _max: { lockedUntil: true },
  });
  return new Map(locks.map((l) => [hashes.get(l.emailHash), l._max.lockedUntil]));
}

/** An account's members, oldest first. */
export async function listAccountMembers(prisma: PrismaClient, accountId: string, now = new Date()) {
  const rows = await prisma.member.findMany({ where: { accountId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
  const locked = await lockedUntilByEmail(
    prisma,
    rows.map((m) => m.email),
    now,
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

/**
 * Removes one member of `accountId`, never its last: the account row is locked for the check, so
 * two members removing each other at once cannot leave it with none.
 */
export async function removeAccountMember(prisma: PrismaClient, accountId: string, memberId: string) {
  return prisma.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`;
    const member = await tx.member.findFirst({ where: { id: memberId, accountId }, select: { email: true } });
    if (!member) return { outcome: "not_found" as const };
    if ((await tx.member.count({ where: { accountId } })) <= 1) return { outcome: "last_member" as const };
    await tx.member.delete({ where: { id: memberId } });
    return { outcome: "removed" as const, email: member.email };
  });
}
