import { AppError, invalid } from "@mailroom/core";
import { addMember, listAccountMembers, normalizeMemberEmail, removeAccountMember } from "@mailroom/db";
import { z } from "zod";
import type { OpsContext } from "./context.ts";

/**
 * The console's Members page: a signed-in member lists, invites and removes the members of their
 * own account (never another's: every query is scoped by the session's account). An invitation is
 * a member without a password and a one-time set-password link, shown once to the inviter to pass
 * on (the installation sends no mail of its own). The last member cannot be removed: an account
 * nobody can sign in to needs an operator. A member may remove themselves (leave); their session
 * ends with the row.
 */

export const inviteBody = z.strictObject({
  email: z.string({ error: "is required and must be a string" }).max(254, "must be at most 254 characters"),
});

export async function listMembersOf(ctx: OpsContext, accountId: string, selfId: string | undefined) {
  const rows = await listAccountMembers(ctx.prisma, accountId);
  return { data: rows.map((m) => ({ ...m, you: m.id === selfId })) };
}

export async function inviteMember(ctx: OpsContext, accountId: string, input: z.output<typeof inviteBody>) {
  const email = normalizeMemberEmail(input.email);
  if (!email) throw invalid("email: must be an email address");
  const m = await addMember(ctx.prisma, accountId, email, ctx.config.publicApiUrl);
  // Emails are unique across the installation, so an address in use anywhere is refused.
  if (m.taken) throw new AppError("conflict", `${email} is already a member of an account on this installation`);
  return {
    id: m.id,
    email: m.email,
    passwordSet: false,
    setPasswordUrl: m.setPasswordUrl,
    expiresAt: m.expiresAt,
  };
}

export async function removeMemberOf(ctx: OpsContext, accountId: string, memberId: string) {
  const r = await removeAccountMember(ctx.prisma, accountId, memberId);
  if (r.outcome === "not_found") throw new AppError("not_found", "Member not found");
  if (r.outcome === "last_member") {
    throw new AppError("conflict", "The last member cannot be removed: invite someone else first");
  }
  ctx.logger.info({ accountId, memberId }, "member removed");
}
