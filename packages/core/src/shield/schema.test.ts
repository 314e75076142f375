import { describe, expect, test } from "@jest/globals";
import { z } from "zod";
import {
  CONDITION_FIELDS,
  CONDITION_OPERATORS,
  createRuleSchema,
  endpointIdsProblem,
  formatIssuePath,
  formatZodError,
  patchRuleSchema,
} from "./schema.ts";

/** The API's error string for an input, or null when it is valid. */
const errorOf = (schema: z.ZodType, input: unknown): string | null => {
  const r = schema.safeParse(input);
  return r.success ? null : formatZodError(r.error);
};

const subject = { field: "subject", operator: "contains", value: "invoice" };
const valid = { name: "Block invoices", action: "block", conditions: [subject] };
const create = (over: Record<string, unknown>) => errorOf(createRuleSchema, { ...valid, ...over });
const withCondition = (c: Record<string, unknown>) => create({ conditions: [c] });
const patch = (input: unknown) => errorOf(patchRuleSchema, input);

describe("createRuleSchema: a valid rule", () => {
  test("is normalised: trimmed name, endpointIds [], account scope, unknown keys dropped", () => {
    expect(createRuleSchema.parse({ ...valid, name: "  Block invoices  ", extra: 1 })).toEqual({
      name: "Block invoices",
      action: "block",
      conditions: [subject],
      endpointIds: [],
      domainId: null,
      addressId: null,
    });
  });

  test("keeps route endpoint ids and a scope id", () => {
    const out = createRuleSchema.parse({ ...valid, action: "route", endpointIds: ["ep_a", "ep_b"], domainId: "dom_1" });
    expect(out).toMatchObject({ endpointIds: ["ep_a", "ep_b"], domainId: "dom_1", addressId: null });
    expect(createRuleSchema.parse({ ...valid, addressId: "addr_1", domainId: null })).toMatchObject({
      domainId: null,
      addressId: "addr_1",
    });
  });

  test.each(["allow", "block", "route"])("action %s is accepted", (action) => {
    expect(create({ action })).toBeNull();
  });
});

describe("every field × operator", () => {
  const matrix = CONDITION_FIELDS.flatMap((field) => CONDITION_OPERATORS.map((operator) => [field, operator] as const));
  const isBoolOp = (op: string) => op === "is_true" || op === "is_false";

  const isBoolField = (f: string) => f === "has_attachment" || f === "dmarc_overridden";

  test("the matrix covers 15 fields × 7 operators", () => {
    expect(matrix).toHaveLength(105);
  });

  test.each(matrix)("%s %s", (field, operator) => {
    const condition = isBoolOp(operator) ? { field, operator } : { field, operator, value: "x" };
    let expected: string | null = null;
    if (isBoolField(field) && !isBoolOp(operator)) {
      expected = `conditions[0].operator: "${operator}" is not valid for ${field} (use is_true or is_false)`;
    } else if (!isBoolField(field) && isBoolOp(operator)) {
      expected = `conditions[0].operator: "${operator}" is only valid for has_attachment, dmarc_overridden`;
    }
    expect(withCondition(condition)).toBe(expected);
    if (expected === null) {
      expect(createRuleSchema.parse({ ...valid, conditions: [condition] }).conditions).toEqual([condition]);
    }
  });
});

describe("condition value", () => {
  test.each(["contains", "not_contains", "equals", "starts_with", "ends_with"])(
    "is required for %s (absent or null)",
    (operator) => {
      const message = `conditions[0].value: is required for operator "${operator}"`;
      expect(withCondition({ field: "from", operator })).toBe(message);
      expect(withCondition({ field: "from", operator, value: null })).toBe(message);
    },
  );

  test("must not be empty, and is not trimmed", () => {
    expect(withCondition({ ...subject, value: "" })).toBe("conditions[0].value: must not be empty");
    expect(createRuleSchema.parse({ ...valid, conditions: [{ ...subject, value: " re: " }] }).conditions[0]).toEqual({
      ...subject,
      value: " re: ",
    });
  });

  test("is at most 1000 characters", () => {
    expect(withCondition({ ...subject, value: "a".repeat(1000) })).toBeNull();
    expect(withCondition({ ...subject, value: "a".repeat(1001) })).toBe(
      "conditions[0].value: must be at most 1000 characters",
    );
  });

  test("must be a string", () => {
    expect(withCondition({ ...subject, value: 5 })).toBe("conditions[0].value: must be a string");
  });

  test.each(["is_true", "is_false"])("must be absent for %s; null counts as absent and is dropped", (operator) => {
    expect(withCondition({ field: "has_attachment", operator, value: "yes" })).toBe(
      `conditions[0].value: must be omitted for operator "${operator}"`,
    );
    expect(withCondition({ field: "has_attachment", operator, value: "" })).toBe(
      `conditions[0].value: must be omitted for operator "${operator}"`,
    );
    const parsed = createRuleSchema.parse({
      ...valid,
      conditions: [{ field: "has_attachment", operator, value: null }],
    });
    expect(parsed.conditions[0]).toEqual({ field: "has_attachment", operator });
  });
});

describe("condition field and operator", () => {
  test("unknown values name what is allowed", () => {
    expect(withCondition({ ...subject, field: "cc" })).toBe(
      `conditions[0].field: "cc" is not a valid field (expected one of ${CONDITION_FIELDS.join(", ")})`,
    );
    expect(withCondition({ ...subject, operator: "matches" })).toBe(
      `conditions[0].operator: "matches" is not a valid operator (expected one of ${CONDITION_OPERATORS.join(", ")})`,
    );
  });

  test("are required", () => {
    expect(withCondition({ operator: "contains", value: "x" })).toBe("conditions[0].field: is required");
    expect(withCondition({ field: "from", value: "x" })).toBe("conditions[0].operator: is required");
  });

  test("a condition must be an object", () => {
    expect(create({ conditions: ["subject contains x"] })).toBe(
      "conditions[0]: must be an object with field, operator and value",
    );
  });

  test("the path names the failing condition's index", () => {
    expect(create({ conditions: [subject, subject, { field: "body", operator: "is_false" }] })).toBe(
      `conditions[2].operator: "is_false" is only valid for has_attachment, dmarc_overridden`,
    );
  });
});

describe("rule name", () => {
  test.each([
    [undefined, "name: is required"],
    [42, "name: must be a string"],
    ["", "name: must not be empty"],
    ["    ", "name: must not be empty"],
    ["a".repeat(61), "name: must be at most 60 characters"],
    ["a".repeat(60), null],
    [`  ${"a".repeat(60)}  `, null],
  ])("%j → %s", (name, expected) => {
    expect(create({ name })).toBe(expected);
  });
});

describe("action and conditions", () => {
  test("action must be one of allow, block, route", () => {
    expect(create({ action: "drop" })).toBe(
      'action: "drop" is not a valid action (expected one of allow, block, route)',
    );
    expect(create({ action: undefined })).toBe("action: is required");
  });

  test.each([
    [undefined, "conditions: is required"],
    [{}, "conditions: must be an array"],
    [[], "conditions: must have at least 1 condition"],
    [Array(8).fill(subject), null],
    [Array(9).fill(subject), "conditions: must have at most 8 conditions"],
  ])("conditions %j → %s", (conditions, expected) => {
    expect(create({ conditions })).toBe(expected);
  });
});

describe("endpointIds", () => {
  test.each(["allow", "block"])("a non-empty list is refused for %s; an empty one is harmless", (action) => {
    expect(create({ action, endpointIds: ["ep_a"] })).toBe(
      `endpointIds: only allowed when action is "route" (action is "${action}")`,
    );
    expect(create({ action, endpointIds: [] })).toBeNull();
  });

  test("route takes 0 to 2 unique non-empty ids", () => {
    const route = (endpointIds: unknown) => create({ action: "route", endpointIds });
    expect(route([])).toBeNull();
    expect(route(["ep_a", "ep_b"])).toBeNull();
    expect(route(["ep_a", "ep_b", "ep_c"])).toBe(
      "endpointIds: must have at most 2 entries (one webhook and one email destination)",
    );
    expect(route(["ep_a", "ep_a"])).toBe('endpointIds[1]: "ep_a" duplicates endpointIds[0]');
    expect(route([""])).toBe("endpointIds[0]: must not be empty");
    expect(route("ep_a")).toBe("endpointIds: must be an array of endpoint ids");
  });

  test("endpointIdsProblem is the shared check PATCH uses against the stored action", () => {
    expect(endpointIdsProblem("route", ["ep_a"])).toBeNull();
    expect(endpointIdsProblem("block", [])).toBeNull();
    expect(endpointIdsProblem("block", undefined)).toBeNull();
    expect(endpointIdsProblem("allow", ["ep_a"])).toBe('only allowed when action is "route" (action is "allow")');
  });
});

describe("scope", () => {
  test("domainId and addressId are mutually exclusive", () => {
    expect(create({ domainId: "dom_1", addressId: "addr_1" })).toBe(
      "addressId: cannot be combined with domainId (a rule is limited to one domain or one address)",
    );
  });

  test("scope ids must be non-empty strings", () => {
    expect(create({ domainId: "" })).toBe("domainId: must not be empty");
    expect(create({ addressId: 7 })).toBe("addressId: must be a string");
  });
});

describe("a value of the wrong type is told only that", () => {
  test.each([
    ["conditions", "a string longer than eight", "conditions: must be an array"],
    ["conditions", "", "conditions: must be an array"],
    ["endpointIds", "ep_a,ep_b,ep_c", "endpointIds: must be an array of endpoint ids"],
    ["name", Array(61).fill("a"), "name: must be a string"],
    ["domainId", [], "domainId: must be a string"],
  ])("%s = %j", (key, value, expected) => {
    expect(create({ action: "route", [key]: value })).toBe(expected);
  });
});

describe("request body", () => {
  test.each([null, [], "rule", 1])("%j is not an object", (body) => {
    expect(errorOf(createRuleSchema, body)).toBe("request body must be a JSON object");
  });
});

describe("patchRuleSchema", () => {
  test.each([
    [{ name: " Renamed " }, { name: "Renamed" }],
    [{ enabled: false }, { enabled: false }],
    [{ conditions: [subject] }, { conditions: [subject] }],
    [{ endpointIds: ["ep_a"] }, { endpointIds: ["ep_a"] }],
  ])("accepts %j alone", (input, output) => {
    expect(patchRuleSchema.parse(input)).toEqual(output);
  });

  test("needs at least one field", () => {
    const message = "request body must include at least one of name, enabled, conditions, endpointIds";
    expect(patch({})).toBe(message);
    expect(patch({ name: undefined })).toBe(message);
  });

  test("refuses fields that cannot be changed, naming each", () => {
    const tail = "is not a field that can be updated (updatable: name, enabled, conditions, endpointIds)";
    expect(patch({ name: "x", action: "allow" })).toBe(`action: ${tail}`);
    // With nothing updatable left, the body is also told what it lacks.
    expect(patch({ domainId: "dom_1", priority: 1 })).toBe(
      `domainId: ${tail}; priority: ${tail}; request body must include at least one of name, enabled, conditions, endpointIds`,
    );
  });

  test("validates each field like creation does", () => {
    expect(patch({ enabled: "yes" })).toBe("enabled: must be true or false");
    expect(patch({ name: "" })).toBe("name: must not be empty");
    expect(patch({ conditions: [] })).toBe("conditions: must have at least 1 condition");
    expect(patch({ conditions: [{ field: "to", operator: "is_true" }] })).toBe(
      `conditions[0].operator: "is_true" is only valid for has_attachment, dmarc_overridden`,
    );
    expect(patch({ endpointIds: ["a", "b", "c"] })).toBe(
      "endpointIds: must have at most 2 entries (one webhook and one email destination)",
    );
    expect(patch(null)).toBe("request body must be a JSON object");
  });
});

describe("formatZodError", () => {
  test("joins the first issues with '; ' and counts the rest", () => {
    const input = {
      name: "",
      action: "x",
      conditions: [
        { field: "from", operator: "is_true" },
        { field: "has_attachment", operator: "equals", value: "a" },
      ],
    };
    const r = createRuleSchema.safeParse(input);
    if (r.success) throw new Error("expected failure");
    expect(r.error.issues.length).toBeGreaterThan(3);
    const all = formatZodError(r.error, 10).split("; ");
    expect(all).toContain("name: must not be empty");
    expect(all).toContain('conditions[0].operator: "is_true" is only valid for has_attachment, dmarc_overridden');
    expect(all).toContain('conditions[1].operator: "equals" is not valid for has_attachment (use is_true or is_false)');
    const three = formatZodError(r.error).split("; ");
    expect(three).toHaveLength(4);
    expect(three[3]).toBe(`and ${r.error.issues.length - 3} more`);
    expect(three.slice(0, 3)).toEqual(all.slice(0, 3));
  });

  test("the REST request wording: dotted paths, the root named, unknown keys once, no count", () => {
    const schema = z.strictObject({ to: z.array(z.email()).min(1), n: z.number() });
    const wording = { root: "body", dotted: true, unknownKeysAtKey: false, countRest: false };
    const many = schema.safeParse({ to: ["x", "y", "z"], n: "1", extra: 1, more: 2 });
    if (many.success) throw new Error("expected failure");
    const parts = formatZodError(many.error, wording).split("; ");
    expect(parts).toHaveLength(3);
    expect(parts[0]).toMatch(/^to\.0: /);
    expect(parts.some((p) => p.startsWith("and "))).toBe(false);
    const unknown = schema.safeParse({ to: ["a@b.example"], n: 1, extra: 1, more: 2 });
    if (unknown.success) throw new Error("expected failure");
    expect(formatZodError(unknown.error, wording)).toBe('body: Unrecognized keys: "extra", "more"');
    expect(formatZodError(unknown.error)).toBe(
      'extra: Unrecognized keys: "extra", "more"; more: Unrecognized keys: "extra", "more"',
    );
  });

  test("formatIssuePath", () => {
    expect(formatIssuePath(["conditions", 0, "operator"], true)).toBe("conditions.0.operator");
    expect(formatIssuePath(["conditions", 0, "operator"])).toBe("conditions[0].operator");
    expect(formatIssuePath(["endpointIds", 1])).toBe("endpointIds[1]");
    expect(formatIssuePath([])).toBe("");
  });
});
