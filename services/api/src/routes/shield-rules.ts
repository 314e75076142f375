import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import type { OpsContext } from "../ops/context.ts";
import { dryRunShieldRules } from "../ops/shield-dry-run.ts";
import {
  createShieldRule,
  deleteShieldRule,
  getShieldRule,
  listShieldRules,
  reorderShieldRules,
  updateShieldRule,
} from "../ops/shield-rules.ts";

export function shieldRulesRouter(ctx: OpsContext): Router {
  const r = Router();
  r.post("/shield-rules", async (req, res) => {
    res.status(201).json(await createShieldRule(ctx, accountOf(req), req.body));
  });
  r.get("/shield-rules", async (req, res) => {
    res.json(await listShieldRules(ctx, accountOf(req)));
  });
  // Registered before /shield-rules/:id so that "reorder" and "test" are never taken for ids.
  r.post("/shield-rules/reorder", async (req, res) => {
    res.json(await reorderShieldRules(ctx, accountOf(req), req.body));
  });
  r.post("/shield-rules/test", async (req, res) => {
    res.json(await dryRunShieldRules(ctx, accountOf(req), req.body));
  });
  r.get("/shield-rules/:id", async (req, res) => {
    res.json(await getShieldRule(ctx, accountOf(req), req.params.id));
  });
  r.patch("/shield-rules/:id", async (req, res) => {
    res.json(await updateShieldRule(ctx, accountOf(req), req.params.id, req.body));
  });
  r.delete("/shield-rules/:id", async (req, res) => {
    await deleteShieldRule(ctx, accountOf(req), req.params.id);
    res.status(204).end();
  });
  return r;
}
