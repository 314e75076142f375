import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { listBlocks } from "../ops/blocks.ts";
import type { OpsContext } from "../ops/context.ts";

export function blocksRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get("/blocks", async (req, res) => {
    res.json(await listBlocks(ctx, accountOf(req), req.query as Record<string, unknown>));
  });
  return r;
}
