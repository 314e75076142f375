import { createRuleSchema, patchRuleSchema } from "@mailroom/core";
import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented, type RouteDoc } from "../lib/route.ts";
import { idParams } from "../lib/schemas.ts";
import type { OpsContext } from "../ops/context.ts";
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

/** What the OpenAPI document says about each route, by the operation it runs. */
const docs = {
  createShieldRule: {
    tag,
    summary: "Create a shield rule; it is appended last in evaluation order",
    body: createRuleSchema,
    responses: { 201: { description: "The rule", schema: shieldRuleSchema } },
    errors: { 402: "The account is at its plan's rule cap (free 3, scale 200)" },
  },
  listShieldRules: {
    tag,
    summary: "Every rule of the account, in evaluation order (not paginated: at most 200)",
    responses: { 200: { description: "The rules", schema: shieldRuleListSchema } },
  },
  reorderShieldRules: {
    tag,
    summary: "Set the evaluation order: ids must list every rule exactly once, first = priority 1",
    body: reorderSchema,
    responses: { 200: { description: "The rules in their new order", schema: shieldRuleListSchema } },
  },
  dryRunShieldRules: {
    tag,
    summary: "Dry run: which rule would decide for a message (fields or raw MIME), and why",
    description:
      "Evaluates the stored rules; nothing is stored or delivered. `recipient` (default: the first To) " +
      "decides which domain and address scopes apply. Verdicts are taken as given.",
    body: dryRunSchema,
    responses: { 200: { description: "The decision with its trace", schema: dryRunResultSchema } },
  },
  getShieldRule: {
    tag,
    summary: "Get a shield rule",
    params: idParams,
    responses: { 200: { description: "The rule", schema: shieldRuleSchema } },
    errors: notFound,
  },
  updateShieldRule: {
    tag,
    summary: "Change a rule's name, enabled, conditions or endpointIds (action, scope and order stay)",
    params: idParams,
    body: patchRuleSchema,
    responses: { 200: { description: "The rule", schema: shieldRuleSchema } },
    errors: notFound,
  },
  deleteShieldRule: {
    tag,
    summary: "Delete a rule; the rules after it move up one place",
    params: idParams,
    responses: { 204: { description: "Deleted" } },
    errors: notFound,
  },
} satisfies Record<string, RouteDoc>;

export function shieldRulesRouter(ctx: OpsContext): Router {
  const r = Router();
  r.post(
    "/shield-rules",
    documented(docs.createShieldRule, async (req, res) => {
      res.status(201).json(await createShieldRule(ctx, accountOf(req), req.body));
    }),
  );
  r.get(
    "/shield-rules",
    documented(docs.listShieldRules, async (req, res) => {
      res.json(await listShieldRules(ctx, accountOf(req)));
    }),
  );
  // Registered before /shield-rules/:id so that "reorder" and "test" are never taken for ids.
  r.post(
    "/shield-rules/reorder",
    documented(docs.reorderShieldRules, async (req, res) => {
      res.json(await reorderShieldRules(ctx, accountOf(req), req.body));
    }),
  );
  r.post(
    "/shield-rules/test",
    documented(docs.dryRunShieldRules, async (req, res) => {
      res.json(await dryRunShieldRules(ctx, accountOf(req), req.body));
    }),
  );
  r.get(
    "/shield-rules/:id",
    documented(docs.getShieldRule, async (req, res) => {
      res.json(await getShieldRule(ctx, accountOf(req), String(req.params.id)));
    }),
  );
  r.patch(
    "/shield-rules/:id",
    documented(docs.updateShieldRule, async (req, res) => {
      res.json(await updateShieldRule(ctx, accountOf(req), String(req.params.id), req.body));
    }),
  );
  r.delete(
    "/shield-rules/:id",
    documented(docs.deleteShieldRule, async (req, res) => {
      await deleteShieldRule(ctx, accountOf(req), String(req.params.id));
      res.status(204).end();
    }),
  );
  return r;
}
