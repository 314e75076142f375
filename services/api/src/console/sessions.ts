import { createHash } from "node:crypto";
import { hashSecretToken, newSecretToken } from "@mailroom/core";
import { newId, type PrismaClient } from "@mailroom/db";

/**
 * Console sessions: a random token in an HttpOnly cookie, its SHA-256 in `console_sessions`. Idle
 * sessions end after IDLE_MS; none outlives ABSOLUTE_MS. Deleting the row ends the session at once
 * (logout, password set, member removed).
 */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
export const SESSION_ABSOLUTE_MS = 7 * 24 * 60 * 60 * 1000;
/** The idle expiry is pushed forward at most this often, not on every request (one write a minute). */
const TOUCH_EVERY_MS = 60 * 1000;

export type ConsoleMember = { sessionId: string; memberId: string; accountId: string; email: string };

export async function createSession(prisma: PrismaClient, memberId: string, now = new Date()) {
  const token = newSecretToken();
  await prisma.consoleSession.create({
    data: {
      id: newId("consoleSession"),
      memberId,
      hash: hashSecretToken(token),
      expiresAt: new Date(now.getTime() + SESSION_IDLE_MS),
      lastSeenAt: now,
      createdAt: now,
    },
  });
  return token;
}

/** The signed-in member for a cookie token, or null (unknown, expired, ended). */
export async function resolveSession(prisma: PrismaClient, token: string, now = new Date()) {
  const row = await prisma.consoleSession.findUnique({
    where: { hash: hashSecretToken(token) },
    include: { member: { select: { accountId: true, email: true } } },
  });
  if (!row) return null;
  if (row.expiresAt <= now || now.getTime() - row.createdAt.getTime() >= SESSION_ABSOLUTE_MS) {
    await prisma.consoleSession.deleteMany({ where: { id: row.id } });
    return null;
  }
  if (now.getTime() - row.lastSeenAt.getTime() >= TOUCH_EVERY_MS) {
    const cap = row.createdAt.getTime() + SESSION_ABSOLUTE_MS;
    await prisma.consoleSession.updateMany({
      where: { id: row.id },
      data: { lastSeenAt: now, expiresAt: new Date(Math.min(cap, now.getTime() + SESSION_IDLE_MS)) },
    });
  }
  const member: ConsoleMember = {
    sessionId: row.id,
    memberId: row.memberId,
    accountId: row.member.accountId,
    email: row.member.email,
  };
  return member;
}

export async function endSession(prisma: PrismaClient, sessionId: string): Promise<void> {
  await prisma.consoleSession.deleteMany({ where: { id: sessionId } });
}

/**
 * The CSRF token of a session: derived from the session token (which only the cookie carries), so
 * it needs no storage, differs per session, and a page on another origin can neither read nor
 * compute it. The console reads it from GET /console/api/session and sends it as X-CSRF-Token.
 */
export const csrfTokenOf = (sessionToken: string): string =>
  createHash("sha256").update(`mailroom-console-csrf\0${sessionToken}`).digest("base64url");
