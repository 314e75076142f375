import { getAccount } from "./account.ts";
import type { OpsContext } from "./context.ts";

/**
 * The console's first page: the account (plan, rule cap, this month's allotment), mail received
 * today (UTC) and deliveries that are failing — `dead` ones need the user; `retrying` ones are
 * still being retried. Also what exists, so empty states can say what to do next.
 */
export async function getOverview(ctx: OpsContext, accountId: string, now = new Date()) {
  const startOfDay = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const [account, mailToday, dead, retrying, domains, endpoints, addresses] = await Promise.all([
    getAccount(ctx, accountId, now),
    ctx.prisma.email.count({ where: { accountId, direction: "inbound", receivedAt: { gte: startOfDay } } }),
    ctx.prisma.delivery.count({ where: { accountId, status: "dead" } }),
    ctx.prisma.delivery.count({ where: { accountId, status: "retrying" } }),
    ctx.prisma.domain.count({ where: { accountId } }),
    ctx.prisma.endpoint.count({ where: { accountId } }),
    ctx.prisma.address.count({ where: { accountId } }),
  ]);
  return {
    account,
    mailToday,
    deliveries: { dead, retrying },
    counts: { domains, endpoints, addresses },
  };
}
