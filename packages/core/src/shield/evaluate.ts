/**
 * Shield rule evaluation (DESIGN.md §4): enabled rules whose scope covers the recipient, ascending
 * priority, the first rule whose conditions all match decides. Pure: the rule engine and the dry-run
 * endpoint (POST /shield-rules/test) both call this with facts they gathered themselves.
 */
import {
  type BooleanCondition,
  type BooleanField,
  type Condition,
  type ConditionField,
  type ConditionOperator,
  isBooleanField,
  type RuleAction,
  type TextField,
} from "./fields.ts";

export type MessageFacts = {
  /** Sender address (envelope MAIL FROM or From, the caller's choice). */
  from: string;
  /** Part after the last `@` of `from`; derived from `from` when omitted. */
  fromDomain?: string;
  /** Envelope recipient + To + Cc. */
  to: readonly string[];
  subject: string | null;
  /** Text body. */
  body: string | null;
  attachments: readonly { filename: string | null; contentType: string | null }[];
  spamVerdict: string | null;
  spfVerdict: string | null;
  dkimVerdict: string | null;
  /** DMARC as evaluated here; an ARC override leaves it FAIL and sets `dmarcOverridden`. */
  dmarcVerdict: string | null;
  arcVerdict: string | null;
  /** ClamAV's verdict (GRAY when clamd is not configured or did not answer in time). */
  virusVerdict: string | null;
  /** A DMARC failure vouched for by a valid ARC chain from a trusted sealer. */
  dmarcOverridden: boolean;
};

export type RuleScope = "account" | "domain" | "address";

export type RuleForEval = {
  id: string;
  name: string;
  action: RuleAction;
  priority: number;
  enabled: boolean;
  domainId: string | null;
  addressId: string | null;
  conditions: readonly Condition[];
  endpointIds: readonly string[];
};

export type Recipient = { domainId: string; addressId: string | null };

export type ConditionTrace = { index: number; field: ConditionField; operator: ConditionOperator; matched: boolean };

/**
 * One entry per rule given, in evaluation order. `skipped` rules were not evaluated and have no
 * condition entries: disabled, scoped elsewhere, or behind the rule that decided.
 */
export type RuleTrace = {
  ruleId: string;
  name: string;
  priority: number;
  matched: boolean;
  skipped?: "disabled" | "out_of_scope" | "not_reached";
  conditions: ConditionTrace[];
};

export type RuleDecision<R extends RuleForEval = RuleForEval> =
  | { decision: "none" }
  | { decision: "allow" | "block"; rule: R }
  | { decision: "route"; rule: R; endpointIds: string[] };

export type Evaluation<R extends RuleForEval = RuleForEval> = RuleDecision<R> & { trace: RuleTrace[] };

export function scopeOf(rule: Pick<RuleForEval, "domainId" | "addressId">): RuleScope {
  if (rule.addressId !== null) return "address";
  if (rule.domainId !== null) return "domain";
  return "account";
}

/** Each scope id a rule sets must equal the recipient's; an account rule sets none. */
export function ruleCoversRecipient(rule: Pick<RuleForEval, "domainId" | "addressId">, recipient: Recipient): boolean {
  if (rule.domainId !== null && rule.domainId !== recipient.domainId) return false;
  if (rule.addressId !== null && rule.addressId !== recipient.addressId) return false;
  return true;
}

export function domainOfAddress(address: string): string {
  const at = address.lastIndexOf("@");
  return at === -1 ? "" : address.slice(at + 1);
}

const fold = (s: string | null | undefined) => (s ?? "").toLowerCase();

/** The values a text field holds; multi-valued fields hold one per recipient or attachment. */
function valuesOf(facts: MessageFacts, field: TextField): (string | null)[] {
  switch (field) {
    case "from":
      return [facts.from];
    case "from_domain":
      return [facts.fromDomain ?? domainOfAddress(facts.from)];
    case "to":
      return [...facts.to];
    case "subject":
      return [facts.subject];
    case "body":
      return [facts.body];
    case "attachment_name":
      return facts.attachments.map((a) => a.filename);
    case "attachment_type":
      return facts.attachments.map((a) => a.contentType);
    case "spam_verdict":
      return [facts.spamVerdict];
    case "spf_verdict":
      return [facts.spfVerdict];
    case "dkim_verdict":
      return [facts.dkimVerdict];
    case "dmarc_verdict":
      return [facts.dmarcVerdict];
    case "arc_verdict":
      return [facts.arcVerdict];
    case "virus_verdict":
      return [facts.virusVerdict];
  }
}

const isBooleanCondition = (c: Condition): c is BooleanCondition => isBooleanField(c.field);

/** The value of a yes/no field. */
function truthOf(facts: MessageFacts, field: BooleanField): boolean {
  switch (field) {
    case "has_attachment":
      return facts.attachments.length > 0;
    case "dmarc_overridden":
      return facts.dmarcOverridden;
  }
}

/**
 * Case-insensitive. A multi-valued field matches when any value matches, and `not_contains` when
 * none contains (so it holds for a message with no attachments). A condition the schema would have
 * refused (wrong operator for the field, missing value) never matches.
 */
export function evaluateCondition(facts: MessageFacts, condition: Condition): boolean {
  if (isBooleanCondition(condition)) {
    const truth = truthOf(facts, condition.field);
    if (condition.operator === "is_true") return truth;
    if (condition.operator === "is_false") return !truth;
    return false;
  }
  const { operator } = condition;
  if (typeof condition.value !== "string" || condition.value === "") return false;
  const needle = condition.value.toLowerCase();
  const values = valuesOf(facts, condition.field).map(fold);
  switch (operator) {
    case "contains":
      return values.some((v) => v.includes(needle));
    case "not_contains":
      return !values.some((v) => v.includes(needle));
    case "equals":
      return values.some((v) => v === needle);
    case "starts_with":
      return values.some((v) => v.startsWith(needle));
    case "ends_with":
      return values.some((v) => v.endsWith(needle));
    default:
      return false;
  }
}

export function evaluateRules<R extends RuleForEval>(
  facts: MessageFacts,
  rules: readonly R[],
  recipient: Recipient,
): Evaluation<R> {
  // Stable sort: equal priorities (which the database forbids per account) keep the given order.
  const ordered = [...rules].sort((a, b) => a.priority - b.priority);
  const trace: RuleTrace[] = [];
  let decided: R | undefined;
  for (const rule of ordered) {
    const entry: RuleTrace = {
      ruleId: rule.id,
      name: rule.name,
      priority: rule.priority,
      matched: false,
      conditions: [],
    };
    trace.push(entry);
    if (decided) entry.skipped = "not_reached";
    else if (!rule.enabled) entry.skipped = "disabled";
    else if (!ruleCoversRecipient(rule, recipient)) entry.skipped = "out_of_scope";
    if (entry.skipped) continue;
    // Every condition is evaluated (no short-circuit) so the trace can show each one.
    entry.conditions = rule.conditions.map((c, index) => ({
      index,
      field: c.field,
      operator: c.operator,
      matched: evaluateCondition(facts, c),
    }));
    entry.matched = entry.conditions.length > 0 && entry.conditions.every((c) => c.matched);
    if (entry.matched) decided = rule;
  }
  if (!decided) return { decision: "none", trace };
  if (decided.action === "route")
    return { decision: "route", rule: decided, endpointIds: [...decided.endpointIds], trace };
  return { decision: decided.action, rule: decided, trace };
}
