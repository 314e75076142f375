import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented } from "../lib/route.ts";
import { pageOf } from "../lib/schemas.ts";
import { getBlock, listBlocks, listBlocksQuery } from "../ops/blocks.ts";
import type { OpsContext } from "../ops/context.ts";
import { blockSchema } from "./shield-schemas.ts";

export function blocksRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get(
    "/blocks",
    documented(
      {
        tag: "Shield rules",
        summary: "Block records (what remains of blocked mail), newest first",
        query: listBlocksQuery,
        responses: { 200: { description: "A page of block records", schema: pageOf(blockSchema) } },
      },
      async (req, res) => {
        res.json(await listBlocks(ctx, accountOf(req), req.query));
      },
    ),
  );
  r.get(
    "/blocks/:id",
    documented(
      {
        tag: "Shield rules",
        summary: "One block record",
        responses: {
          200: { description: "The block record", schema: blockSchema },
          404: { description: "No such block record on this account" },
        },
      },
      async (req, res) => {
        res.json(await getBlock(ctx, accountOf(req), String(req.params.id)));
      },
    ),
  );
  return r;
}
