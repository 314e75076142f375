import { type Route, route } from "../lib/route.ts";
import { pageOf } from "../lib/schemas.ts";
import { getBlock, listBlocks, listBlocksQuery } from "../ops/blocks.ts";
import { blockSchema } from "./shield-schemas.ts";

export const blocksRoutes: Route[] = [
  route({
    method: "GET",
    path: "/blocks",
    doc: {
      tag: "Shield rules",
      summary: "Block records (what remains of blocked mail), newest first",
      query: listBlocksQuery,
      responses: { 200: { description: "A page of block records", schema: pageOf(blockSchema) } },
    },
    handle: (ctx, { account, query }) => listBlocks(ctx, account, query),
  }),
  route({
    method: "GET",
    path: "/blocks/:id",
    doc: {
      tag: "Shield rules",
      summary: "One block record",
      responses: {
        200: { description: "The block record", schema: blockSchema },
        404: { description: "No such block record on this account" },
      },
    },
    handle: (ctx, { account, params }) => getBlock(ctx, account, String(params.id)),
  }),
];
