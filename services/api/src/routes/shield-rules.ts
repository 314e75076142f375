import { createRuleSchema, patchRuleSchema } from "@mailroom/core";
import { type Route, route } from "../lib/route.ts";
import { idParams } from "../lib/schemas.ts";
import { dryRunSchema, dryRunShieldRules } from "../ops/shield-dry-run.ts";
import {
  createShieldRule,
  deleteShieldRule,
  getShieldRule,
  listShieldRules,
  reorderSchema,
  reorderShieldRules,
  updateShieldRule,
} from "../ops/shield-rules.ts";
import { dryRunResultSchema, shieldRuleListSchema, shieldRuleSchema } from "./shield-schemas.ts";

const tag = "Shield rules";
const notFound = { 404: "Not found or not the caller's" };
// The shield-rule schemas word their messages for core's `field[0].sub: message` form.
const messages = "rules";

// "reorder" and "test" come before /shield-rules/:id so that they are never taken for ids.
export const shieldRulesRoutes: Route[] = [
  route({
    method: "POST",
    path: "/shield-rules",
    messages,
    doc: {
      tag,
      summary: "Create a shield rule; it is appended last in evaluation order",
      body: createRuleSchema,
      responses: { 201: { description: "The rule", schema: shieldRuleSchema } },
      errors: { 402: "The account is at its plan's rule cap (free 3, scale 200)" },
    },
    handle: (ctx, { account, body }) => createShieldRule(ctx, account, body),
  }),
  route({
    method: "GET",
    path: "/shield-rules",
    doc: {
      tag,
      summary: "Every rule of the account, in evaluation order (not paginated: at most 200)",
      responses: { 200: { description: "The rules", schema: shieldRuleListSchema } },
    },
    handle: (ctx, { account }) => listShieldRules(ctx, account),
  }),
  route({
    method: "POST",
    path: "/shield-rules/reorder",
    messages,
    doc: {
      tag,
      summary: "Set the evaluation order: ids must list every rule exactly once, first = priority 1",
      body: reorderSchema,
      responses: { 200: { description: "The rules in their new order", schema: shieldRuleListSchema } },
    },
    handle: (ctx, { account, body }) => reorderShieldRules(ctx, account, body),
  }),
  route({
    method: "POST",
    path: "/shield-rules/test",
    messages,
    doc: {
      tag,
      summary: "Dry run: which rule would decide for a message (fields or raw MIME), and why",
      description:
        "Evaluates the stored rules; nothing is stored or delivered. `recipient` (default: the first To) " +
        "decides which domain and address scopes apply. Verdicts are taken as given.",
      body: dryRunSchema,
      responses: { 200: { description: "The decision with its trace", schema: dryRunResultSchema } },
    },
    handle: (ctx, { account, body }) => dryRunShieldRules(ctx, account, body),
  }),
  route({
    method: "GET",
    path: "/shield-rules/:id",
    doc: {
      tag,
      summary: "Get a shield rule",
      params: idParams,
      responses: { 200: { description: "The rule", schema: shieldRuleSchema } },
      errors: notFound,
    },
    handle: (ctx, { account, params }) => getShieldRule(ctx, account, params.id),
  }),
  route({
    method: "PATCH",
    path: "/shield-rules/:id",
    messages,
    doc: {
      tag,
      summary: "Change a rule's name, enabled, conditions or endpointIds (action, scope and order stay)",
      params: idParams,
      body: patchRuleSchema,
      responses: { 200: { description: "The rule", schema: shieldRuleSchema } },
      errors: notFound,
    },
    handle: (ctx, { account, params, body }) => updateShieldRule(ctx, account, params.id, body),
  }),
  route({
    method: "DELETE",
    path: "/shield-rules/:id",
    doc: {
      tag,
      summary: "Delete a rule; the rules after it move up one place",
      params: idParams,
      responses: { 204: { description: "Deleted" } },
      errors: notFound,
    },
    handle: (ctx, { account, params }) => deleteShieldRule(ctx, account, params.id),
  }),
];
