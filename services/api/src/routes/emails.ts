import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import type { OpsContext } from "../ops/context.ts";
import { getEmail } from "../ops/emails.ts";

export function emailsRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get("/emails/:id", async (req, res) => {
    res.json(await getEmail(ctx, accountOf(req), req.params.id));
  });
  return r;
}
