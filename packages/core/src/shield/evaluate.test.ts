import { describe, expect, test } from "@jest/globals";
import {
  evaluateCondition,
  evaluateRules,
  type MessageFacts,
  type Recipient,
  type RuleForEval,
  ruleCoversRecipient,
  scopeOf,
} from "./evaluate.ts";
import { type Condition, TEXT_FIELDS, TEXT_OPERATORS, type TextField, type TextOperator } from "./schema.ts";

// Nothing in the base facts contains any needle used below ("nomatch-xyz", the targets' pieces).
const base: MessageFacts = {
  from: "nobody@elsewhere.test",
  to: ["someone@elsewhere.test"],
  subject: "nothing here",
  body: "nothing here",
  attachments: [],
  spamVerdict: null,
  spfVerdict: null,
  dkimVerdict: null,
  dmarcVerdict: null,
  arcVerdict: null,
  virusVerdict: null,
  dmarcOverridden: false,
};
const facts = (over: Partial<MessageFacts> = {}): MessageFacts => ({ ...base, ...over });

const recipient: Recipient = { domainId: "dom_1", addressId: "addr_1" };

let seq = 0;
const rule = (over: Partial<RuleForEval> = {}): RuleForEval => {
  seq += 1;
  return {
    id: `gr_${seq}`,
    name: `rule ${seq}`,
    action: "block",
    priority: seq,
    enabled: true,
    domainId: null,
    addressId: null,
    conditions: [{ field: "subject", operator: "contains", value: "invoice" }],
    endpointIds: [],
    ...over,
  };
};

const when = (...conditions: Condition[]) => rule({ conditions });
const decide = (f: MessageFacts, rules: RuleForEval[], to: Recipient = recipient) =>
  evaluateRules(f, rules, to).decision;

/** Each text field holds a mixed-case target; multi-valued fields also hold an unrelated value. */
const TARGETS: Record<TextField, { value: string; facts: (v: string) => Partial<MessageFacts> }> = {
  from: { value: "Alerts@Billing.Example.COM", facts: (v) => ({ from: v }) },
  from_domain: { value: "Billing.Example.COM", facts: (v) => ({ from: `Alerts@${v}` }) },
  to: { value: "Inbox@Mail.Example.ORG", facts: (v) => ({ to: ["other@unrelated.test", v] }) },
  subject: { value: "Quarterly Report Q3", facts: (v) => ({ subject: v }) },
  body: { value: "Hello Team,\nthe Quarterly Report is attached.", facts: (v) => ({ body: v }) },
  attachment_name: {
    value: "Report-Q3.PDF",
    facts: (v) => ({
      attachments: [
        { filename: "notes.txt", contentType: "text/plain" },
        { filename: v, contentType: "application/octet-stream" },
      ],
    }),
  },
  attachment_type: {
    value: "Application/PDF",
    facts: (v) => ({
      attachments: [
        { filename: "notes.txt", contentType: "text/plain" },
        { filename: "x.bin", contentType: v },
      ],
    }),
  },
  spam_verdict: { value: "PASS", facts: (v) => ({ spamVerdict: v }) },
  spf_verdict: { value: "FAIL", facts: (v) => ({ spfVerdict: v }) },
  dkim_verdict: { value: "GRAY", facts: (v) => ({ dkimVerdict: v }) },
  dmarc_verdict: { value: "FAIL", facts: (v) => ({ dmarcVerdict: v }) },
  arc_verdict: { value: "PASS", facts: (v) => ({ arcVerdict: v }) },
  virus_verdict: { value: "FAIL", facts: (v) => ({ virusVerdict: v }) },
};

// Needles flip the target's case, so every pair also proves case-insensitivity. Misses are "near":
// a substring that is not a prefix, a suffix, or the whole value.
const swapCase = (s: string) => [...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("");
function needles(target: string, op: TextOperator): { hit: string; miss: string } {
  switch (op) {
    case "contains":
      return { hit: swapCase(target.slice(1, -1)), miss: "nomatch-xyz" };
    case "not_contains":
      return { hit: "nomatch-xyz", miss: swapCase(target.slice(1, -1)) };
    case "equals":
      return { hit: swapCase(target), miss: swapCase(target.slice(0, -1)) };
    case "starts_with":
      return { hit: swapCase(target.slice(0, 3)), miss: swapCase(target.slice(1, 4)) };
    case "ends_with":
      return { hit: swapCase(target.slice(-3)), miss: swapCase(target.slice(-4, -1)) };
  }
}

const matrix = TEXT_FIELDS.flatMap((field) => TEXT_OPERATORS.map((operator) => [field, operator] as const));

describe("every text field × operator", () => {
  test("the matrix covers 13 fields × 5 operators", () => {
    expect(matrix).toHaveLength(65);
  });

  test.each(matrix)("%s %s: one matching and one non-matching value", (field, operator) => {
    const target = TARGETS[field];
    const f = facts(target.facts(target.value));
    const { hit, miss } = needles(target.value, operator);
    expect(evaluateCondition(f, { field, operator, value: hit })).toBe(true);
    expect(evaluateCondition(f, { field, operator, value: miss })).toBe(false);
    expect(decide(f, [when({ field, operator, value: hit })])).toBe("block");
    expect(decide(f, [when({ field, operator, value: miss })])).toBe("none");
  });
});

describe("has_attachment", () => {
  const withOne = facts({ attachments: [{ filename: "a.pdf", contentType: "application/pdf" }] });
  test.each([
    ["is_true", withOne, facts()],
    ["is_false", facts(), withOne],
  ] as const)("%s: matches and does not match", (operator, matching, other) => {
    expect(evaluateCondition(matching, { field: "has_attachment", operator })).toBe(true);
    expect(evaluateCondition(other, { field: "has_attachment", operator })).toBe(false);
  });

  test.each([
    ["is_true", true, false],
    ["is_false", false, true],
  ] as const)("dmarc_overridden %s", (operator, matchesWhenOverridden, matchesOtherwise) => {
    const c = { field: "dmarc_overridden", operator } as const;
    expect(evaluateCondition(facts({ dmarcOverridden: true }), c)).toBe(matchesWhenOverridden);
    expect(evaluateCondition(facts({ dmarcOverridden: false }), c)).toBe(matchesOtherwise);
    // Attachments say nothing about DMARC, and the override says nothing about attachments.
    const withOne = facts({ attachments: [{ filename: "a.pdf", contentType: "application/pdf" }] });
    expect(evaluateCondition(withOne, c)).toBe(matchesOtherwise);
    expect(evaluateCondition(facts({ dmarcOverridden: true }), { field: "has_attachment", operator: "is_true" })).toBe(
      false,
    );
  });

  test("an attachment without a filename or type still counts", () => {
    const f = facts({ attachments: [{ filename: null, contentType: null }] });
    expect(evaluateCondition(f, { field: "has_attachment", operator: "is_true" })).toBe(true);
  });
});

describe("comparison", () => {
  test("is case-insensitive in both directions", () => {
    const upper = facts({ subject: "URGENT: WIRE TRANSFER" });
    const lower = facts({ subject: "urgent: wire transfer" });
    const c: Condition = { field: "subject", operator: "equals", value: "Urgent: Wire Transfer" };
    expect(evaluateCondition(upper, c)).toBe(true);
    expect(evaluateCondition(lower, c)).toBe(true);
  });

  test("does not trim or otherwise loosen equals", () => {
    expect(evaluateCondition(facts({ subject: "hi " }), { field: "subject", operator: "equals", value: "hi" })).toBe(
      false,
    );
  });

  test("from_domain is the part after the last @ of from, not the local part", () => {
    const f = facts({ from: '"odd@name"@Sender.Example' });
    expect(evaluateCondition(f, { field: "from_domain", operator: "equals", value: "sender.example" })).toBe(true);
    const local = facts({ from: "billing@other.test" });
    expect(evaluateCondition(local, { field: "from_domain", operator: "contains", value: "billing" })).toBe(false);
  });

  test("an explicit fromDomain is used as given", () => {
    const f = facts({ from: "a@b.test", fromDomain: "given.test" });
    expect(evaluateCondition(f, { field: "from_domain", operator: "equals", value: "given.test" })).toBe(true);
    expect(evaluateCondition(f, { field: "from_domain", operator: "equals", value: "b.test" })).toBe(false);
  });

  test("a from without @ has an empty domain", () => {
    const f = facts({ from: "MAILER-DAEMON" });
    expect(evaluateCondition(f, { field: "from_domain", operator: "contains", value: "mailer" })).toBe(false);
    expect(evaluateCondition(f, { field: "from_domain", operator: "not_contains", value: "mailer" })).toBe(true);
  });

  test.each([
    ["spam_verdict", "spamVerdict"],
    ["spf_verdict", "spfVerdict"],
    ["dkim_verdict", "dkimVerdict"],
    ["dmarc_verdict", "dmarcVerdict"],
    ["arc_verdict", "arcVerdict"],
    ["virus_verdict", "virusVerdict"],
  ] as const)("a null %s compares as the empty string", (field, key) => {
    const f = facts({ [key]: null });
    expect(evaluateCondition(f, { field, operator: "equals", value: "PASS" })).toBe(false);
    expect(evaluateCondition(f, { field, operator: "contains", value: "PASS" })).toBe(false);
    expect(evaluateCondition(f, { field, operator: "not_contains", value: "PASS" })).toBe(true);
  });

  test("a null subject and body compare as the empty string", () => {
    const f = facts({ subject: null, body: null });
    expect(evaluateCondition(f, { field: "subject", operator: "not_contains", value: "x" })).toBe(true);
    expect(evaluateCondition(f, { field: "body", operator: "starts_with", value: "x" })).toBe(false);
  });

  test("a condition the schema refuses never matches", () => {
    const f = facts({ subject: "anything", attachments: [{ filename: "a", contentType: "b" }] });
    const bad = [
      { field: "subject", operator: "is_true" },
      { field: "subject", operator: "not_contains" },
      { field: "subject", operator: "not_contains", value: "" },
      { field: "has_attachment", operator: "contains", value: "a" },
    ] as unknown as Condition[];
    for (const c of bad) expect(evaluateCondition(f, c)).toBe(false);
  });
});

describe("multi-valued fields", () => {
  const multi = facts({
    to: ["envelope@a.test", "to@b.test", "cc@c.test"],
    attachments: [
      { filename: "invoice.pdf", contentType: "application/pdf" },
      { filename: "photo.JPG", contentType: "image/jpeg" },
    ],
  });

  test.each([
    ["to", "envelope@a.test"],
    ["to", "to@b.test"],
    ["to", "cc@c.test"],
    ["attachment_name", "invoice.pdf"],
    ["attachment_name", "photo.jpg"],
    ["attachment_type", "image/jpeg"],
  ] as const)("%s matches when any value matches (%s)", (field, value) => {
    expect(evaluateCondition(multi, { field, operator: "equals", value })).toBe(true);
  });

  test.each([
    ["to", "b.test", false],
    ["to", "z.test", true],
    ["attachment_name", ".jpg", false],
    ["attachment_name", ".exe", true],
    ["attachment_type", "image/", false],
    ["attachment_type", "zip", true],
  ] as const)("%s not_contains %s holds only when no value contains it → %s", (field, value, expected) => {
    expect(evaluateCondition(multi, { field, operator: "not_contains", value })).toBe(expected);
  });

  test("with no attachments nothing matches positively and not_contains holds", () => {
    for (const operator of ["contains", "equals", "starts_with", "ends_with"] as const) {
      expect(evaluateCondition(facts(), { field: "attachment_name", operator, value: "a" })).toBe(false);
    }
    expect(evaluateCondition(facts(), { field: "attachment_type", operator: "not_contains", value: "a" })).toBe(true);
  });
});

describe("a rule's conditions are ANDed", () => {
  const f = facts({ from: "ceo@corp.test", subject: "Wire transfer", spfVerdict: "FAIL" });
  const c1: Condition = { field: "from_domain", operator: "equals", value: "corp.test" };
  const c2: Condition = { field: "subject", operator: "contains", value: "wire" };
  const c3: Condition = { field: "spf_verdict", operator: "equals", value: "fail" };

  test("all matching decides", () => {
    expect(decide(f, [when(c1, c2, c3)])).toBe("block");
  });

  test("one failing condition is enough to skip the rule, and the trace says which", () => {
    const r = when(c1, { ...c2, value: "invoice" }, c3);
    const result = evaluateRules(f, [r], recipient);
    expect(result.decision).toBe("none");
    expect(result.trace[0]?.matched).toBe(false);
    expect(result.trace[0]?.conditions.map((c) => c.matched)).toEqual([true, false, true]);
    expect(result.trace[0]?.conditions[1]).toEqual({
      index: 1,
      field: "subject",
      operator: "contains",
      matched: false,
    });
  });

  test("a rule without conditions never matches", () => {
    expect(decide(f, [when()])).toBe("none");
  });
});

describe("scope", () => {
  test("scopeOf", () => {
    expect(scopeOf({ domainId: null, addressId: null })).toBe("account");
    expect(scopeOf({ domainId: "dom_1", addressId: null })).toBe("domain");
    expect(scopeOf({ domainId: null, addressId: "addr_1" })).toBe("address");
  });

  const invoice = facts({ subject: "invoice" });
  test.each([
    ["account rule, any recipient", { domainId: null, addressId: null }, { domainId: "dom_9", addressId: null }, true],
    [
      "domain rule, same domain",
      { domainId: "dom_1", addressId: null },
      { domainId: "dom_1", addressId: "addr_7" },
      true,
    ],
    [
      "domain rule, same domain catch-all",
      { domainId: "dom_1", addressId: null },
      { domainId: "dom_1", addressId: null },
      true,
    ],
    [
      "domain rule, other domain",
      { domainId: "dom_1", addressId: null },
      { domainId: "dom_2", addressId: "addr_1" },
      false,
    ],
    [
      "address rule, same address",
      { domainId: null, addressId: "addr_1" },
      { domainId: "dom_1", addressId: "addr_1" },
      true,
    ],
    [
      "address rule, other address",
      { domainId: null, addressId: "addr_1" },
      { domainId: "dom_1", addressId: "addr_2" },
      false,
    ],
    [
      "address rule, catch-all mail",
      { domainId: null, addressId: "addr_1" },
      { domainId: "dom_1", addressId: null },
      false,
    ],
  ] as const)("%s → applies: %s", (_label, scope, to, applies) => {
    const r = rule({ ...scope });
    expect(ruleCoversRecipient(r, to)).toBe(applies);
    const result = evaluateRules(invoice, [r], to);
    expect(result.decision).toBe(applies ? "block" : "none");
    expect(result.trace[0]?.skipped).toBe(applies ? undefined : "out_of_scope");
  });

  test("an out-of-scope rule is passed over for the next one", () => {
    const elsewhere = rule({ action: "allow", domainId: "dom_2" });
    const here = rule({ action: "block" });
    expect(decide(invoice, [elsewhere, here])).toBe("block");
  });
});

describe("evaluation order", () => {
  const invoice = facts({ subject: "Your invoice" });

  test("no rules, or none matching, decides nothing", () => {
    expect(evaluateRules(invoice, [], recipient)).toEqual({ decision: "none", trace: [] });
    const r = when({ field: "subject", operator: "contains", value: "receipt" });
    const result = evaluateRules(invoice, [r], recipient);
    expect(result.decision).toBe("none");
    expect(result.trace).toHaveLength(1);
  });

  test("a disabled rule is skipped, even when it would match", () => {
    const off = rule({ action: "allow", enabled: false });
    const on = rule({ action: "block" });
    const result = evaluateRules(invoice, [off, on], recipient);
    expect(result.decision).toBe("block");
    expect(result.trace[0]).toMatchObject({ ruleId: off.id, skipped: "disabled", matched: false, conditions: [] });
    expect(decide(invoice, [off])).toBe("none");
  });

  test("ascending priority, whatever order the rules are given in", () => {
    const late = rule({ action: "block", priority: 20 });
    const early = rule({ action: "allow", priority: 10 });
    const input = [late, early];
    const result = evaluateRules(invoice, input, recipient);
    expect(result.decision).toBe("allow");
    expect(result.trace.map((t) => t.priority)).toEqual([10, 20]);
    expect(input).toEqual([late, early]);
  });

  test("the first matching rule decides; later ones are not reached", () => {
    const miss = rule({ action: "block", conditions: [{ field: "subject", operator: "contains", value: "nope" }] });
    const allow = rule({ action: "allow" });
    const block = rule({ action: "block" });
    const result = evaluateRules(invoice, [miss, allow, block], recipient);
    expect(result.decision).toBe("allow");
    if (result.decision === "none") throw new Error("expected a decision");
    expect(result.rule).toBe(allow);
    expect(result.trace.map((t) => [t.ruleId, t.matched, t.skipped])).toEqual([
      [miss.id, false, undefined],
      [allow.id, true, undefined],
      [block.id, false, "not_reached"],
    ]);
  });

  test("route returns the rule's endpoint ids; an empty list quarantines", () => {
    const route = rule({ action: "route", endpointIds: ["ep_1", "ep_2"] });
    const result = evaluateRules(invoice, [route], recipient);
    expect(result).toMatchObject({ decision: "route", rule: route, endpointIds: ["ep_1", "ep_2"] });
    if (result.decision !== "route") throw new Error("expected route");
    expect(result.endpointIds).not.toBe(route.endpointIds);
    const quarantine = rule({ action: "route", endpointIds: [] });
    expect(evaluateRules(invoice, [quarantine], recipient)).toMatchObject({ decision: "route", endpointIds: [] });
  });

  test("allow and block carry no endpoint ids", () => {
    for (const action of ["allow", "block"] as const) {
      const result = evaluateRules(invoice, [rule({ action, endpointIds: ["ep_1"] })], recipient);
      expect(result.decision).toBe(action);
      expect("endpointIds" in result).toBe(false);
    }
  });

  test("the caller's own rule type comes back", () => {
    const row = { ...rule(), accountId: "acc_1" };
    const result = evaluateRules(invoice, [row], recipient);
    if (result.decision === "none") throw new Error("expected a decision");
    expect(result.rule.accountId).toBe("acc_1");
  });
});
