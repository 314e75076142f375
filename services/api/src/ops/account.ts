import { AppError, BUILTIN_RETENTION_DAYS, limitValue, MAX_RETENTION_DAYS, monthKey, planLimits } from "@mailroom/core";
import { monthlyReceived } from "@mailroom/db";
import { z } from "zod";
import type { OpsContext } from "./context.ts";

/** What new accounts on this installation keep (DEFAULT_RETENTION_DAYS); absent: the built-in 30. */
export const defaultRetentionOf = (ctx: OpsContext): number | null =>
  ctx.config.defaultRetentionDays === undefined ? BUILTIN_RETENTION_DAYS : ctx.config.defaultRetentionDays;

export const updateAccountBody = z
  .strictObject({
    name: z
      .string({ error: "must be a string" })
      .trim()
      .min(1, "must not be empty")
      .max(100, "must be at most 100 characters")
      .optional(),
    retentionDays: z
      .number({ error: `must be a whole number of days (1 to ${MAX_RETENTION_DAYS}) or null (kept forever)` })
      .int(`must be a whole number of days (1 to ${MAX_RETENTION_DAYS}) or null (kept forever)`)
      .min(1, "must be at least 1 day, or null (kept forever)")
      .max(MAX_RETENTION_DAYS, `must be at most ${MAX_RETENTION_DAYS} days, or null (kept forever)`)
      .nullable()
      .optional()
      .describe("mail older than this is deleted by the next retention pass; null keeps it forever"),
  })
  .refine((b) => b.name !== undefined || b.retentionDays !== undefined, "give name, retentionDays or both");

/** Renames the caller's account or changes how long its mail is kept; answers the account. */
export async function updateAccount(ctx: OpsContext, accountId: string, input: z.output<typeof updateAccountBody>) {
  const r = await ctx.prisma.account.updateMany({
    where: { id: accountId },
    data: {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.retentionDays !== undefined ? { retentionDays: input.retentionDays } : {}),
    },
  });
  if (r.count === 0) throw new AppError("not_found", "Account not found");
  ctx.logger.info({ accountId, ...input }, "account settings changed");
  return getAccount(ctx, accountId);
}

/** The caller's account: plan, its limits and this month's usage. */
export async function getAccount(ctx: OpsContext, accountId: string, now = new Date()) {
  const month = monthKey(now);
  const [account, received, rules] = await Promise.all([
    ctx.prisma.account.findUnique({ where: { id: accountId } }),
    monthlyReceived(ctx.prisma, accountId, month),
    ctx.prisma.shieldRule.count({ where: { accountId } }),
  ]);
  if (!account) throw new AppError("not_found", "Account not found");
  const limits = planLimits(account.plan);
  return {
    id: account.id,
    name: account.name,
    plan: account.plan,
    limits: { shieldRules: limitValue(limits.shieldRules), monthlyAllotment: limitValue(limits.monthlyAllotment) },
    usage: {
      month,
      received,
      remaining: limitValue(Math.max(0, limits.monthlyAllotment - received)),
      shieldRules: rules,
    },
    retentionDays: account.retentionDays,
    defaultRetentionDays: defaultRetentionOf(ctx),
    createdAt: account.createdAt.toISOString(),
  };
}
