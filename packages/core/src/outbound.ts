import { randomBytes } from "node:crypto";

/** What a reply needs to know about the message it answers. */
export type ReplySource = {
  direction: string;
  messageId: string;
  references: readonly string[];
  subject: string;
  fromAddress: string;
  toAddresses: readonly string[];
  ccAddresses: readonly string[];
  replyTo: readonly string[];
};

/** `Re: ` once: an existing `Re:` / `RE:` / `Re[2]:` prefix is kept as is. */
export function replySubject(subject: string): string {
  const s = subject.trim();
  return /^re(\[\d+\])?\s*:/i.test(s) ? s : `Re: ${s}`;
}

/** Longest References header we write; RFC 5322 §3.6.4 allows trimming the middle of a long chain. */
const MAX_REFERENCES = 20;

/** RFC 5322 §3.6.4: the parent's References (or its In-Reply-To) followed by the parent's Message-ID. */
export function replyReferences(parent: Pick<ReplySource, "messageId" | "references">): string[] {
  const chain = [...new Set([...parent.references, parent.messageId].filter(Boolean))];
  if (chain.length <= MAX_REFERENCES) return chain;
  // Keep the thread's root (first) and the most recent ones.
  return [chain[0] as string, ...chain.slice(chain.length - (MAX_REFERENCES - 1))];
}

const lower = (a: string) => a.trim().toLowerCase();

function uniqueExcept(list: readonly string[], exclude: ReadonlySet<string>): string[] {
  const seen = new Set(exclude);
  const out: string[] = [];
  for (const raw of list) {
    const a = lower(raw);
    if (!a || seen.has(a)) continue;
    seen.add(a);
    out.push(a);
  }
  return out;
}

/**
 * Recipients of a reply sent as `self`. An inbound message is answered to its Reply-To (else its
 * From); a reply to one of our own outbound messages goes to that message's recipients again.
 * `replyAll` adds the original To and Cc; `self` never receives its own reply.
 */
export function replyRecipients(
  parent: ReplySource,
  self: string,
  opts: { replyAll: boolean; cc: readonly string[] },
): { to: string[]; cc: string[] } {
  const me = new Set([lower(self)]);
  const outbound = parent.direction === "outbound";
  const primary = outbound ? parent.toAddresses : parent.replyTo.length ? parent.replyTo : [parent.fromAddress];
  const to = uniqueExcept(opts.replyAll && !outbound ? [...primary, ...parent.toAddresses] : primary, me);
  const cc = uniqueExcept([...(opts.replyAll ? parent.ccAddresses : []), ...opts.cc], new Set([...me, ...to]));
  return { to, cc };
}

/** `<random@domain>`: the same bracketed form inbound Message-IDs are stored in, so threading matches. */
export function newMessageId(domain: string): string {
  return `<${randomBytes(18).toString("base64url")}@${domain}>`;
}
