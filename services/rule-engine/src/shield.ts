/**
 * The `shield` step of processRecipient (DESIGN.md §3/§4): the account's enabled rules in priority
 * order, evaluated by the pure evaluator in @mailroom/core against this recipient's message facts.
 */
import { type Condition, evaluateRules, type MessageFacts, type RuleAction, type RuleForEval } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import type { ShieldInput, ShieldOutcome } from "./process.ts";

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
export function createShield(prisma: PrismaClient): (input: ShieldInput) => Promise<ShieldOutcome> {
  return async (input) => {
    // Read by processRecipient's load step with everything else; callers without it read them here.
    const rules = input.rules ?? (await loadRules(prisma, input.accountId));
    if (rules.length === 0) return { action: "deliver", ruleId: null, ruleAction: null, endpointIds: null };
    const result = evaluateRules(messageFacts(input), rules, {
      domainId: input.domainId,
      addressId: input.addressId,
    });
    switch (result.decision) {
      case "none":
        return { action: "deliver", ruleId: null, ruleAction: null, endpointIds: null };
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
