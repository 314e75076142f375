import { monthKey, planLimits } from "@mailroom/core";
import { isPostmaster } from "./postmaster.ts";
import type { Lookup } from "./rcpt-lookup.ts";

/** Where an accepted recipient goes, and the allotment its account had at RCPT (null: none). */
export type Route = {
  accountId: string;
  domainId: string;
  addressId: string | null;
  recipient: string;
  allotment: number | null;
};

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
export async function decideRecipient(lookup: Lookup, rcpt: string, now = new Date()): Promise<RcptDecision> {
  const at = rcpt.lastIndexOf("@");
  if (at < 1) return reject(550, "5.1.1", "Recipient address rejected: no such user");
  const localPart = rcpt.slice(0, at).toLowerCase();
  const domainName = rcpt
    .slice(at + 1)
    .toLowerCase()
    .replace(/\.$/, "");
  const candidates = [localPart];
  const plus = localPart.indexOf("+");
  if (plus > 0) candidates.push(localPart.slice(0, plus));
  const rows = await lookup({ domain: domainName, candidates, month: monthKey(now) });
  const domain = rows[0];
  if (domain?.status !== "verified") return reject(550, "5.1.1", "Recipient address rejected: no such user");

  const address = rows.find((a) => a.localPart === localPart) ?? rows.find((a) => a.localPart === candidates[1]);

  if (address && !address.active) return reject(550, "5.2.1", "Recipient address rejected: mailbox disabled");
  // postmaster is accepted for every domain we host (RFC 5321 §4.5.1), stored for its account.
  if (!address && !domain.catchAllEnabled && !isPostmaster(localPart)) {
    return reject(550, "5.1.1", "Recipient address rejected: no such user");
  }

  // A first look: the exact check is made when the message is counted at DATA (usage.ts).
  const allotment = planLimits(domain.plan).monthlyAllotment;
  if (Number(domain.used) >= allotment) {
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
      domainId: domain.domainId,
      addressId: address?.addressId ?? null,
      recipient: `${localPart}@${domainName}`,
      allotment: Number.isFinite(allotment) ? allotment : null,
    },
  };
}
