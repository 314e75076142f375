/**
 * POST /shield-rules/test: runs the account's stored rules against a message without receiving it.
 * The message is given as fields or as raw MIME; the answer says which rule would decide, what that
 * would do, and why (the evaluator's per-rule, per-condition trace). Nothing is stored or sent.
 */
import {
  addressesOf,
  type Condition,
  domainOfAddress,
  evaluateRules,
  firstAddressOf,
  invalid,
  type MessageFacts,
  type Recipient,
  type RuleAction,
} from "@mailroom/core";
import { simpleParser } from "mailparser";
import { z } from "zod";
import type { OpsContext } from "./context.ts";
import { shieldRuleView } from "./shield-rules.ts";

const str = (max: number) => z.string({ error: "must be a string" }).max(max, `must be at most ${max} characters`);
// An address field is a header value (`Alice <alice@x>`, lists, groups): one line, never a header break.
const addressLine = str(2000).regex(/^[^\r\n]*$/, "must be one line");
const addressList = z
  .union([addressLine, z.array(addressLine, { error: "must be an array of addresses" }).max(100)], {
    error: "must be an address or an array of addresses",
  })
  .transform((v) => (Array.isArray(v) ? v : [v]));
const verdict = str(40).nullish();

const MESSAGE_FIELDS = ["from", "to", "cc", "subject", "body", "attachments"] as const;

export const dryRunSchema = z
  .strictObject(
    {
      /** Envelope recipient; decides which domain and address scopes apply. Default: the first `to`. */
      recipient: str(320).optional(),
      raw: z.string({ error: "must be a string (the raw MIME message)" }).min(1, "must not be empty").optional(),
      from: addressLine.optional(),
      to: addressList.optional(),
      cc: addressList.optional(),
      subject: str(10_000).nullish(),
      body: str(1_000_000).nullish(),
      attachments: z
        .array(
          z.strictObject(
            { filename: str(1000).nullish(), contentType: str(255).nullish() },
            { error: "must be an object with filename and contentType" },
          ),
          { error: "must be an array" },
        )
        .max(100, "must have at most 100 entries")
        .optional(),
      spamVerdict: verdict,
      spfVerdict: verdict,
      dkimVerdict: verdict,
      dmarcVerdict: verdict,
      arcVerdict: verdict,
      virusVerdict: verdict,
      dmarcOverridden: z.boolean({ error: "must be true or false" }).optional(),
    },
    { error: "request body must be a JSON object" },
  )
  .superRefine((b, ctx) => {
    if (b.raw !== undefined) {
      for (const k of MESSAGE_FIELDS) {
        if (b[k] !== undefined) {
          ctx.addIssue({ code: "custom", path: [k], message: "cannot be combined with raw (give fields or raw MIME)" });
        }
      }
    } else if (b.from === undefined) {
      ctx.addIssue({ code: "custom", path: ["from"], message: "is required unless raw is given" });
    }
  });

const lower = (a: string) => a.trim().toLowerCase();

/**
 * Address fields read exactly as the rule engine reads the message's headers: mailparser parses
 * them as header values and @mailroom/core's addressesOf / firstAddressOf pick the addresses.
 */
async function parseAddressFields(fields: { from?: string; to: string[]; cc: string[] }) {
  const line = (name: string, values: string[]) => (values.length > 0 ? `${name}: ${values.join(", ")}\r\n` : "");
  const m = await simpleParser(
    line("From", fields.from === undefined ? [] : [fields.from]) +
      line("To", fields.to) +
      line("Cc", fields.cc) +
      "\r\n",
  );
  return {
    from: firstAddressOf(m.from),
    to: addressesOf(m.to),
    cc: addressesOf(m.cc),
  };
}

type Message = Omit<MessageFacts, "to"> & { to: string[]; cc: string[] };

async function messageOf(input: z.output<typeof dryRunSchema>): Promise<Message> {
  // Verdicts are computed on arrival (DNS, rspamd, clamd); the dry run takes them as given.
  const verdicts = {
    spamVerdict: input.spamVerdict ?? null,
    spfVerdict: input.spfVerdict ?? null,
    dkimVerdict: input.dkimVerdict ?? null,
    dmarcVerdict: input.dmarcVerdict ?? null,
    arcVerdict: input.arcVerdict ?? null,
    virusVerdict: input.virusVerdict ?? null,
    dmarcOverridden: input.dmarcOverridden ?? false,
  };
  if (input.raw !== undefined) {
    const m = await simpleParser(input.raw, { skipTextLinks: true, skipImageLinks: true, skipHtmlToText: false });
    return {
      from: firstAddressOf(m.from),
      to: addressesOf(m.to),
      cc: addressesOf(m.cc),
      subject: m.subject ?? "",
      body: m.text ?? "",
      attachments: m.attachments.map((a) => ({
        filename: a.filename ?? "attachment",
        contentType: a.contentType || "application/octet-stream",
      })),
      ...verdicts,
    };
  }
  const parsed = await parseAddressFields({ from: input.from, to: input.to ?? [], cc: input.cc ?? [] });
  return {
    from: parsed.from,
    to: parsed.to,
    cc: parsed.cc,
    subject: input.subject ?? null,
    body: input.body ?? null,
    attachments: (input.attachments ?? []).map((a) => ({
      filename: a.filename ?? null,
      contentType: a.contentType ?? null,
    })),
    ...verdicts,
  };
}

/** The recipient's domain and address on this account, resolved as SMTP ingest does (`user+tag` → `user`). */
async function resolveRecipient(ctx: OpsContext, accountId: string, recipient: string) {
  const at = recipient.lastIndexOf("@");
  const localPart = at > 0 ? recipient.slice(0, at) : "";
  const domainName = domainOfAddress(recipient).replace(/\.$/, "");
  const domain = localPart
    ? await ctx.prisma.domain.findFirst({ where: { accountId, domain: domainName }, select: { id: true } })
    : null;
  if (!domain) return { domainId: null, addressId: null };
  const plus = localPart.indexOf("+");
  const candidates = plus > 0 ? [localPart, localPart.slice(0, plus)] : [localPart];
  const rows = await ctx.prisma.address.findMany({
    where: { domainId: domain.id, localPart: { in: candidates } },
    select: { id: true, localPart: true },
  });
  const address = rows.find((a) => a.localPart === candidates[0]) ?? rows.find((a) => a.localPart === candidates[1]);
  return { domainId: domain.id, addressId: address?.id ?? null };
}

const OUTCOME_TEXT = {
  allow: "delivered normally to the address's destination; no later rule is evaluated",
  block: "dropped: only a block record is kept, the body is not stored and nothing is delivered",
  route: "stored and delivered to the rule's endpointIds instead of the address's destination",
  quarantine: "stored (readable over the API) and delivered nowhere",
} as const;

export async function dryRunShieldRules(ctx: OpsContext, accountId: string, input: z.output<typeof dryRunSchema>) {
  const message = await messageOf(input);
  const recipientAddress = lower(input.recipient ?? message.to[0] ?? "");
  if (!recipientAddress) throw invalid("recipient: is required when the message has no To address");

  const where = await resolveRecipient(ctx, accountId, recipientAddress);
  // A recipient on none of the account's domains still meets account-wide rules; scoped ones never match it.
  const recipient: Recipient = { domainId: where.domainId ?? "", addressId: where.addressId };
  const facts: MessageFacts = {
    ...message,
    to: [...new Set([recipientAddress, ...message.to, ...message.cc])],
  };
  const rows = await ctx.prisma.shieldRule.findMany({ where: { accountId }, orderBy: { priority: "asc" } });
  const rules = rows.map((r) => ({
    ...r,
    action: r.action as RuleAction,
    conditions: r.conditions as Condition[],
  }));
  const result = evaluateRules(facts, rules, recipient);

  const outcome =
    result.decision === "none"
      ? "deliver"
      : result.decision === "route" && result.endpointIds.length === 0
        ? "quarantine"
        : result.decision;
  const reason =
    result.decision === "none"
      ? "No enabled rule in scope matched: the message would be delivered to the address's destination."
      : `Rule "${result.rule.name}" (priority ${result.rule.priority}) matched all ${result.rule.conditions.length} ` +
        `condition(s): the message would be ${OUTCOME_TEXT[outcome as keyof typeof OUTCOME_TEXT]}.`;
  return {
    decision: result.decision,
    outcome,
    rule: result.decision === "none" ? null : shieldRuleView(result.rule),
    endpointIds: result.decision === "route" ? result.endpointIds : null,
    reason,
    recipient: { address: recipientAddress, ...where },
    facts: {
      from: facts.from,
      fromDomain: domainOfAddress(facts.from),
      to: facts.to,
      subject: facts.subject,
      hasAttachment: facts.attachments.length > 0,
      attachments: facts.attachments,
      spamVerdict: facts.spamVerdict,
      spfVerdict: facts.spfVerdict,
      dkimVerdict: facts.dkimVerdict,
      dmarcVerdict: facts.dmarcVerdict,
      arcVerdict: facts.arcVerdict,
      virusVerdict: facts.virusVerdict,
      dmarcOverridden: facts.dmarcOverridden,
    },
    trace: result.trace,
  };
}
