import { monthKey, planLimits } from "@mailroom/core";
import { monthlyReceivedSql, type Queryable } from "@mailroom/db";
import { isPostmaster } from "./postmaster.ts";

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
export async function decideRecipient(db: Queryable, rcpt: string, now = new Date()): Promise<RcptDecision> {
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
  const rows = await lookup(db, domainName, candidates, monthKey(now));
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

type LookupRow = {
  domainId: string;
  accountId: string;
  status: string;
  catchAllEnabled: boolean;
  plan: string;
  used: string;
  addressId: string | null;
  localPart: string | null;
  active: boolean | null;
};

/**
 * Everything RCPT needs in one query (it was four): the domain, its account's plan and this month's
 * usage, and the candidate addresses, one row each (a single row with null address columns if none).
 */
async function lookup(db: Queryable, domain: string, candidates: string[], month: string): Promise<LookupRow[]> {
  // Named: each pooled connection parses and plans it once, not at every RCPT.
  const r = await db.query<LookupRow>({
    name: "ingest-rcpt-lookup",
    text: LOOKUP,
    values: [domain, candidates, month],
  });
  return r.rows;
}

const LOOKUP = `
  SELECT d.id AS "domainId", d."accountId", d.status, d."catchAllEnabled", acc.plan,
         ${monthlyReceivedSql('d."accountId"', "$3")} AS used,
         a.id AS "addressId", a."localPart", a.active
    FROM domains d
    JOIN accounts acc ON acc.id = d."accountId"
    LEFT JOIN addresses a ON a."domainId" = d.id AND a."localPart" = ANY($2::text[])
   WHERE d.domain = $1`;
