import { signInEmailHash } from "@mailroom/core";
import {
  addMember,
  issueSetPasswordLink,
  listAccountMembers,
  normalizeMemberEmail,
  type PrismaClient,
} from "@mailroom/db";
import { AdminError, type Row } from "./ops.ts";

/**
 * Console members (issue 17). An operator creates a member; the member sets their own password with
 * the one-time link printed here (24 h, one use). The operator never sees or chooses a password.
 * The same functions (@mailroom/db members.ts) serve the console's Members page.
 */

export function normalizeEmail(email: string): string {
  const e = normalizeMemberEmail(email);
  if (!e) throw new AdminError(`"${email}" is not an email address`);
  return e;
}

export async function createMember(prisma: PrismaClient, accountId: string, email: string, consoleUrl: string) {
  const address = normalizeEmail(email);
  const account = await prisma.account.findUnique({ where: { id: accountId } });
  if (!account) throw new AdminError(`account ${accountId} not found`);
  const m = await addMember(prisma, accountId, address, consoleUrl);
  if (m.taken) throw new AdminError(`${address} is already a member (use: members reset-password --email ${address})`);
  const { taken: _, ...created } = m;
  return created;
}

/** A new one-time link for a member who lost theirs or forgot the password; also lifts their lockouts. */
export async function resetPassword(prisma: PrismaClient, email: string, consoleUrl: string) {
  const address = normalizeEmail(email);
  const m = await prisma.member.findUnique({ where: { email: address } });
  if (!m) throw new AdminError(`${address} is not a member`);
  // Every address the email is locked at (the API counts failures per email and client address).
  await prisma.signInFailure.deleteMany({ where: { emailHash: signInEmailHash(address) } });
  return {
    id: m.id,
    accountId: m.accountId,
    email: m.email,
    ...(await issueSetPasswordLink(prisma, m.id, consoleUrl)),
  };
}

export const listMembers = (prisma: PrismaClient, accountId: string): Promise<Row[]> =>
  listAccountMembers(prisma, accountId);

/**
 * Removes a member: their sessions go with the row (cascade), so the console refuses them at once.
 * Unlike the console, an operator may remove an account's last member (and create another).
 */
export async function removeMember(prisma: PrismaClient, email: string) {
  const address = normalizeEmail(email);
  const r = await prisma.member.deleteMany({ where: { email: address } });
  if (r.count === 0) throw new AdminError(`${address} is not a member`);
  return { email: address, removed: true };
}
