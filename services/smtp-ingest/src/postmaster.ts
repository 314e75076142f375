/**
 * RFC 5321 §4.1.1.3 and §4.5.1: `RCPT TO:<Postmaster>` (no domain, any case) must be accepted and
 * means the postmaster of this server. We host no mailbox of our own, so it is read as
 * `postmaster@<domain>` for the domain the operator names (SMTP_POSTMASTER_DOMAIN, by default the
 * SMTP hostname) and then routed like any recipient: stored for the account owning that domain.
 * Any other recipient is returned unchanged.
 */
export function qualifyPostmaster(rcpt: string, domain: string): string {
  return rcpt.toLowerCase() === "postmaster" ? `postmaster@${domain.toLowerCase().replace(/\.$/, "")}` : rcpt;
}

/** True for a recipient that is the postmaster of its domain (`postmaster@…`, any case). */
export const isPostmaster = (localPart: string): boolean => localPart.toLowerCase() === "postmaster";
