import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented } from "../lib/route.ts";
import { accountSchema } from "../lib/schemas.ts";
import { getAccount } from "../ops/account.ts";
import type { OpsContext } from "../ops/context.ts";

export function accountRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get(
    "/account",
    documented(
      {
        tag: "Account",
        summary: "The caller's account: plan, its limits and this month's usage",
        responses: { 200: { description: "The account", schema: accountSchema } },
      },
      async (req, res) => {
        res.json(await getAccount(ctx, accountOf(req)));
      },
    ),
  );
  return r;
}
