import { monthKey, planLimits } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";

export type Route = { accountId: string; domainId: string; addressId: string | null; recipient: string };

/** The RCPT-time verdict for one recipient. Rejections carry their SMTP code and enhanced code. */
export type RcptDecision =
  | { ok: true; route: Route }
  | { ok: false; code: 550 | 452; enhanced: string; message: string };

const reject = (code: 550 | 452, enhanced: string, message: string): RcptDecision => ({
  ok: false,
  code,
  enhanced,
  message,
});

/**
 * Maps an envelope recipient to a route (DESIGN.md §3): only verified domains; an explicit address
 * wins (an inactive one rejects); `user+tag` falls back to `user`; otherwise an enabled catch-all.
 */
export async function decideRecipient(prisma: PrismaClient, rcpt: string, now = new Date()): Promise<RcptDecision> {
  const at = rcpt.lastIndexOf("@");
  if (at < 1) return reject(550, "5.1.1", "Recipient address rejected: no such user");
  const localPart = rcpt.slice(0, at).toLowerCase();
  const domainName = rcpt
    .slice(at + 1)
    .toLowerCase()
    .replace(/\.$/, "");
  const domain = await prisma.domain.findUnique({
    where: { domain: domainName },
    include: { account: { select: { plan: true } } },
  });
  if (domain?.status !== "verified") return reject(550, "5.1.1", "Recipient address rejected: no such user");

  const candidates = [localPart];
  const plus = localPart.indexOf("+");
  if (plus > 0) candidates.push(localPart.slice(0, plus));
  const addresses = await prisma.address.findMany({ where: { domainId: domain.id, localPart: { in: candidates } } });
  const address =
    addresses.find((a) => a.localPart === localPart) ?? addresses.find((a) => a.localPart === candidates[1]);

  if (address && !address.active) return reject(550, "5.2.1", "Recipient address rejected: mailbox disabled");
  if (!address && !domain.catchAllEnabled) return reject(550, "5.1.1", "Recipient address rejected: no such user");

  const usage = await prisma.usageCounter.findUnique({
    where: { accountId_month: { accountId: domain.accountId, month: monthKey(now) } },
  });
  const allotment = planLimits(domain.account.plan).monthlyAllotment;
  if ((usage?.received ?? 0) >= allotment) {
    // The sender sees this; the way out is the operator's (`admin accounts set-plan`), named for them.
    return reject(
      452,
      "4.2.2",
      "Mailbox over its monthly allotment, try again later (operator: admin accounts set-plan)",
    );
  }
  return {
    ok: true,
    route: {
      accountId: domain.accountId,
      domainId: domain.id,
      addressId: address?.id ?? null,
      recipient: `${localPart}@${domainName}`,
    },
  };
}
