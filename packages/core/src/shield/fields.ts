/**
 * Shield rule vocabulary: condition fields, operators, which operator goes with which field, actions
 * and limits. No zod here, so the console's browser bundle can import the pairs without the validator.
 */
export const TEXT_FIELDS = [
  "from",
  "from_domain",
  "to",
  "subject",
  "body",
  "attachment_name",
  "attachment_type",
  "spam_verdict",
  "spf_verdict",
  "dkim_verdict",
  "dmarc_verdict",
  "arc_verdict",
  "virus_verdict",
] as const;
/**
 * `has_attachment`: the message has at least one attachment. `dmarc_overridden`: DMARC failed here
 * but a valid ARC chain from a sealer in ARC_TRUSTED_SEALERS vouched for the message (dmarc_verdict
 * keeps the FAIL).
 */
export const BOOLEAN_FIELDS = ["has_attachment", "dmarc_overridden"] as const;
export const CONDITION_FIELDS = [...TEXT_FIELDS, ...BOOLEAN_FIELDS] as const;

export const TEXT_OPERATORS = ["contains", "not_contains", "equals", "starts_with", "ends_with"] as const;
export const BOOLEAN_OPERATORS = ["is_true", "is_false"] as const;
export const CONDITION_OPERATORS = [...TEXT_OPERATORS, ...BOOLEAN_OPERATORS] as const;

export const RULE_ACTIONS = ["allow", "block", "route"] as const;

export const RULE_NAME_MAX = 60;
export const CONDITIONS_MAX = 8;
export const CONDITION_VALUE_MAX = 1000;
/** "at most one webhook and one email destination" (spec §8); which kind each is, the API checks. */
export const ROUTE_ENDPOINTS_MAX = 2;

export type TextField = (typeof TEXT_FIELDS)[number];
export type BooleanField = (typeof BOOLEAN_FIELDS)[number];
export type ConditionField = (typeof CONDITION_FIELDS)[number];
export type TextOperator = (typeof TEXT_OPERATORS)[number];
export type BooleanOperator = (typeof BOOLEAN_OPERATORS)[number];
export type ConditionOperator = (typeof CONDITION_OPERATORS)[number];
export type RuleAction = (typeof RULE_ACTIONS)[number];

export type TextCondition = { field: TextField; operator: TextOperator; value: string };
export type BooleanCondition = { field: BooleanField; operator: BooleanOperator };
export type Condition = TextCondition | BooleanCondition;

export const isTextOperator = (op: string): op is TextOperator => (TEXT_OPERATORS as readonly string[]).includes(op);
export const isBooleanField = (f: string): f is BooleanField => (BOOLEAN_FIELDS as readonly string[]).includes(f);

/** The operators valid for a field (the pairs conditionSchema accepts); the console's builder offers only these. */
export const operatorsFor = (field: ConditionField): readonly ConditionOperator[] =>
  isBooleanField(field) ? BOOLEAN_OPERATORS : TEXT_OPERATORS;
/** Whether a condition with this operator carries a `value` (text operators do, is_true/is_false do not). */
export const operatorTakesValue = (op: ConditionOperator): op is TextOperator => isTextOperator(op);
