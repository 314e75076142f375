/**
 * Shield rule input validation (spec §2 "Shield rule", §4 POST /shield-rules, §8; DESIGN.md §4).
 * Every message names the rule that was broken, so `formatZodError` can turn an issue straight into
 * the API's `{ error: "<path>: <what is wrong>" }`.
 */
import { z } from "zod";

import {
  BOOLEAN_FIELDS,
  type BooleanField,
  CONDITION_FIELDS,
  CONDITION_OPERATORS,
  CONDITION_VALUE_MAX,
  CONDITIONS_MAX,
  type Condition,
  isBooleanField,
  isTextOperator,
  ROUTE_ENDPOINTS_MAX,
  RULE_ACTIONS,
  RULE_NAME_MAX,
  type RuleAction,
  type TextField,
} from "./fields.ts";

export * from "./fields.ts";

const show = (input: unknown) => JSON.stringify(input) ?? String(input);

/** An enum whose errors say what was given and what is allowed. */
function enumOf<const T extends readonly [string, ...string[]]>(values: T, noun: string) {
  return z.enum(values, {
    error: (iss) =>
      iss.input === undefined
        ? "is required"
        : `${show(iss.input)} is not a valid ${noun} (expected one of ${values.join(", ")})`,
  });
}

const requiredString = () =>
  z.string({ error: (iss) => (iss.input === undefined ? "is required" : "must be a string") });

// Length limits are refinements rather than .min()/.max(): zod runs its built-in length checks even
// after a type failure, so `"abc"` for an array would also be told it has too many entries.
function lengthIssue(s: string, max: number): string | null {
  if (s.length === 0) return "must not be empty";
  if (s.length > max) return `must be at most ${max} characters`;
  return null;
}

const boundedString = (max: number) =>
  requiredString().superRefine((s, ctx) => {
    const problem = lengthIssue(s, max);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

export const conditionSchema = z
  .object(
    {
      field: enumOf(CONDITION_FIELDS, "field"),
      operator: enumOf(CONDITION_OPERATORS, "operator"),
      // null is read as "absent": JSON clients often send null for an omitted value.
      value: requiredString().nullish(),
    },
    { error: "must be an object with field, operator and value" },
  )
  .superRefine((c, ctx) => {
    const issue = (path: "operator" | "value", message: string) =>
      ctx.addIssue({ code: "custom", path: [path], message });
    if (isBooleanField(c.field) && isTextOperator(c.operator)) {
      issue("operator", `${show(c.operator)} is not valid for ${c.field} (use is_true or is_false)`);
    } else if (!isBooleanField(c.field) && !isTextOperator(c.operator)) {
      issue("operator", `${show(c.operator)} is only valid for ${BOOLEAN_FIELDS.join(", ")}`);
    }
    if (!isTextOperator(c.operator)) {
      if (c.value != null) issue("value", `must be omitted for operator ${show(c.operator)}`);
    } else if (c.value == null) {
      issue("value", `is required for operator ${show(c.operator)}`);
    } else {
      const problem = lengthIssue(c.value, CONDITION_VALUE_MAX);
      if (problem) issue("value", problem);
    }
  })
  .transform(
    (c): Condition =>
      isTextOperator(c.operator)
        ? { field: c.field as TextField, operator: c.operator, value: c.value ?? "" }
        : { field: c.field as BooleanField, operator: c.operator },
  );

export const conditionsSchema = z
  .array(conditionSchema, { error: (iss) => (iss.input === undefined ? "is required" : "must be an array") })
  .superRefine((list, ctx) => {
    const problem =
      list.length < 1
        ? "must have at least 1 condition"
        : list.length > CONDITIONS_MAX
          ? `must have at most ${CONDITIONS_MAX} conditions`
          : null;
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

export const endpointIdsSchema = z
  .array(boundedString(Number.POSITIVE_INFINITY), { error: "must be an array of endpoint ids" })
  .superRefine((ids, ctx) => {
    if (ids.length > ROUTE_ENDPOINTS_MAX) {
      ctx.addIssue({
        code: "custom",
        message: `must have at most ${ROUTE_ENDPOINTS_MAX} entries (one webhook and one email destination)`,
      });
    }
    ids.forEach((id, i) => {
      const first = ids.indexOf(id);
      if (first !== i) {
        ctx.addIssue({ code: "custom", path: [i], message: `${show(id)} duplicates endpointIds[${first}]` });
      }
    });
  });

const ruleNameSchema = requiredString()
  .trim()
  .superRefine((s, ctx) => {
    const problem = lengthIssue(s, RULE_NAME_MAX);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

/** The one place the "endpointIds is for route only" rule lives; PATCH needs it against the stored action. */
export function endpointIdsProblem(action: RuleAction, endpointIds: readonly string[] | undefined): string | null {
  if (action !== "route" && endpointIds !== undefined && endpointIds.length > 0) {
    return `only allowed when action is "route" (action is ${show(action)})`;
  }
  return null;
}

const scopeIdSchema = boundedString(Number.POSITIVE_INFINITY).nullish();

/**
 * POST /shield-rules body. Unknown keys are dropped. Output is normalised: `endpointIds` defaults
 * to `[]` (a `route` with none quarantines), `domainId`/`addressId` to null (account scope).
 */
export const createRuleSchema = z
  .object(
    {
      name: ruleNameSchema,
      action: enumOf(RULE_ACTIONS, "action"),
      conditions: conditionsSchema,
      endpointIds: endpointIdsSchema.optional(),
      domainId: scopeIdSchema,
      addressId: scopeIdSchema,
    },
    { error: "request body must be a JSON object" },
  )
  .superRefine((r, ctx) => {
    const problem = endpointIdsProblem(r.action, r.endpointIds);
    if (problem) ctx.addIssue({ code: "custom", path: ["endpointIds"], message: problem });
    if (r.domainId != null && r.addressId != null) {
      ctx.addIssue({
        code: "custom",
        path: ["addressId"],
        message: "cannot be combined with domainId (a rule is limited to one domain or one address)",
      });
    }
  })
  .transform((r) => ({
    name: r.name,
    action: r.action,
    conditions: r.conditions,
    endpointIds: r.endpointIds ?? [],
    domainId: r.domainId ?? null,
    addressId: r.addressId ?? null,
  }));

export const PATCHABLE_RULE_FIELDS = ["name", "enabled", "conditions", "endpointIds"] as const;

/**
 * PATCH /shield-rules/{id} body. Unknown keys are refused rather than dropped, so that an attempt to
 * change `action` or scope is not silently ignored. Whether `endpointIds` fits the stored action is
 * checked by the caller with `endpointIdsProblem`.
 */
export const patchRuleSchema = z
  .strictObject(
    {
      name: ruleNameSchema.optional(),
      enabled: z.boolean({ error: "must be true or false" }).optional(),
      conditions: conditionsSchema.optional(),
      endpointIds: endpointIdsSchema.optional(),
    },
    {
      error: (iss) =>
        iss.code === "unrecognized_keys"
          ? `is not a field that can be updated (updatable: ${PATCHABLE_RULE_FIELDS.join(", ")})`
          : "request body must be a JSON object",
    },
  )
  .refine((p) => PATCHABLE_RULE_FIELDS.some((k) => p[k] !== undefined), {
    message: `request body must include at least one of ${PATCHABLE_RULE_FIELDS.join(", ")}`,
  });

export type CreateRuleInput = z.output<typeof createRuleSchema>;
export type PatchRuleInput = z.output<typeof patchRuleSchema>;

/** `conditions[0].operator` from ["conditions", 0, "operator"]; `conditions.0.operator` when dotted. */
export function formatIssuePath(path: readonly PropertyKey[], dotted = false): string {
  let out = "";
  for (const key of path) {
    out += typeof key === "number" && !dotted ? `[${key}]` : `${out ? "." : ""}${String(key)}`;
  }
  return out;
}

/**
 * How `formatZodError` words a set of issues. The defaults are the shield-rule wording (REST, MCP
 * and the console show it): `conditions[0].value: …`, an unknown key at its own path, a problem of
 * the whole value as the message alone, at most 3 and "and N more". The REST request wording
 * (lib/http.ts in the API: `body: …`, `query: …`, dotted paths) and the env wording of
 * @mailroom/config's callers set the options; there is no other formatter.
 */
export type ZodErrorWording = {
  /** Issues shown; the rest are counted ("and N more") unless `countRest` is false. */
  max?: number;
  countRest?: boolean;
  /** What a problem of the whole value is reported against (`body`); absent: the message alone. */
  root?: string;
  /** `a.0.b` instead of `a[0].b`. */
  dotted?: boolean;
  /** An unknown key reported at its own path (true), or once at its object's with zod's message. */
  unknownKeysAtKey?: boolean;
};

/** `path: message` for the first `max` issues, joined by "; ", worded as `ZodErrorWording` says. */
export function formatZodError(error: z.ZodError, wording: ZodErrorWording | number = {}): string {
  const w: ZodErrorWording = typeof wording === "number" ? { max: wording } : wording;
  const max = w.max ?? 3;
  const parts: string[] = [];
  for (const issue of error.issues) {
    const paths =
      issue.code === "unrecognized_keys" && w.unknownKeysAtKey !== false
        ? issue.keys.map((k) => [...issue.path, k])
        : [issue.path as PropertyKey[]];
    for (const path of paths) {
      const where = formatIssuePath(path, w.dotted) || w.root;
      parts.push(where ? `${where}: ${issue.message}` : issue.message);
    }
  }
  const shown = parts.slice(0, max);
  if (parts.length > max && w.countRest !== false) shown.push(`and ${parts.length - max} more`);
  return shown.join("; ");
}
