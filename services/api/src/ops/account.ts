import { AppError, limitValue, monthKey, planLimits } from "@mailroom/core";
import { monthlyReceived } from "@mailroom/db";
import type { OpsContext } from "./context.ts";

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
    createdAt: account.createdAt.toISOString(),
  };
}
