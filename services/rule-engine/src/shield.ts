/**
 * The `shield` step of processRecipient (DESIGN.md §3/§4): the account's enabled rules in priority
 * order, evaluated by the pure evaluator in @mailroom/core against this recipient's message facts.
 */
import { type Condition, evaluateRules, type MessageFacts, type RuleAction, type RuleForEval } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { isDependencyOutage } from "./outage.ts";
import type { ParsedEmail } from "./parse.ts";
import type { AuthVerdicts } from "./verdicts.ts";

/** What shield rules decided for one recipient. `endpointIds: null` = the address's own destination. */
export type ShieldOutcome =
  | { action: "deliver"; ruleId: string | null; ruleAction: "allow" | "route" | null; endpointIds: string[] | null }
  | { action: "block"; ruleId: string; ruleName: string };

export type ShieldInput = {
  accountId: string;
  domainId: string;
  addressId: string | null;
  recipient: string;
  email: ParsedEmail;
  verdicts: AuthVerdicts & { spam: string; virus: string };
  /** The account's enabled rules in priority order, read by the load step; absent: the shield reads them. */
  rules?: readonly RuleForEval[];
};

export type Shield = (input: ShieldInput) => Promise<ShieldOutcome>;

/** No rule matched (or there is no shield): the address's own destination. */
export const DELIVER_UNMATCHED: ShieldOutcome = {
  action: "deliver",
  ruleId: null,
  ruleAction: null,
  endpointIds: null,
};

/** `to` = envelope recipient + To + Cc (deduplicated, lowercased); `from` = the From header address. */
export function messageFacts(input: ShieldInput): MessageFacts {
  const { email, verdicts } = input;
  const to = [input.recipient, ...email.toAddresses, ...email.ccAddresses].map((a) => a.toLowerCase());
  return {
    from: email.fromAddress,
    to: [...new Set(to)],
    subject: email.subject,
    body: email.textBody,
    attachments: email.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType })),
    spamVerdict: verdicts.spam,
    spfVerdict: verdicts.spf,
    dkimVerdict: verdicts.dkim,
    dmarcVerdict: verdicts.dmarc,
    arcVerdict: verdicts.arc,
    virusVerdict: verdicts.virus,
    dmarcOverridden: verdicts.dmarcOverridden,
  };
}

export async function loadRules(prisma: PrismaClient, accountId: string): Promise<RuleForEval[]> {
  const rows = await prisma.shieldRule.findMany({
    where: { accountId, enabled: true },
    orderBy: { priority: "asc" },
    select: {
      id: true,
      name: true,
      action: true,
      priority: true,
      enabled: true,
      domainId: true,
      addressId: true,
      conditions: true,
      endpointIds: true,
    },
  });
  // Conditions were validated by the API on the way in; the evaluator never matches a malformed one.
  return rows.map((r) => ({ ...r, action: r.action as RuleAction, conditions: r.conditions as Condition[] }));
}

/** Builds the ProcessDeps.shield implementation. */
export function createShield(prisma: PrismaClient): Shield {
  return async (input) => {
    // Read by processRecipient's load step with everything else; callers without it read them here.
    const rules = input.rules ?? (await loadRules(prisma, input.accountId));
    if (rules.length === 0) return DELIVER_UNMATCHED;
    const result = evaluateRules(messageFacts(input), rules, {
      domainId: input.domainId,
      addressId: input.addressId,
    });
    switch (result.decision) {
      case "none":
        return DELIVER_UNMATCHED;
      case "allow":
        return { action: "deliver", ruleId: result.rule.id, ruleAction: "allow", endpointIds: null };
      case "route":
        // [] quarantines: stored, delivered nowhere.
        return { action: "deliver", ruleId: result.rule.id, ruleAction: "route", endpointIds: result.endpointIds };
      case "block":
        return { action: "block", ruleId: result.rule.id, ruleName: result.rule.name };
    }
  };
}

/**
 * The `decide` step: the shield's decision, or (no shield) the address's own destination. A message
 * past its processing budget (`failed`) is stored whatever happens: rules that cannot be evaluated
 * for it leave it to the address's own destination, like a message no rule matches. An outage is
 * never swallowed: the job fails and is retried.
 */
export async function decide(
  shield: Shield | undefined,
  input: ShieldInput,
  ctx: { failed: boolean; logger: Logger; spoolRecipientId: string },
): Promise<ShieldOutcome> {
  if (!shield) return DELIVER_UNMATCHED;
  try {
    return await shield(input);
  } catch (err) {
    if (!ctx.failed || isDependencyOutage(err)) throw err;
    ctx.logger.warn(
      { spoolRecipientId: ctx.spoolRecipientId, err: (err as Error).message },
      "shield rules failed; delivering as unmatched",
    );
    return DELIVER_UNMATCHED;
  }
}
