import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented } from "../lib/route.ts";
import { idParams, pageOf, threadSchema, threadSummarySchema } from "../lib/schemas.ts";
import type { OpsContext } from "../ops/context.ts";
import { getThread, listThreads, listThreadsQuery } from "../ops/emails.ts";

const tag = "Threads";

export function threadsRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get(
    "/threads",
    documented(
      {
        tag,
        summary: "List threads, newest activity first",
        query: listThreadsQuery,
        responses: { 200: { description: "A page of threads", schema: pageOf(threadSummarySchema) } },
      },
      async (req, res) => {
        res.json(await listThreads(ctx, accountOf(req), req.query));
      },
    ),
  );
  r.get(
    "/threads/:id",
    documented(
      {
        tag,
        summary: "A thread's messages, oldest first, inbound and outbound",
        params: idParams,
        responses: { 200: { description: "The thread", schema: threadSchema } },
        errors: { 404: "No messages, or not the caller's" },
      },
      async (req, res) => {
        res.json(await getThread(ctx, accountOf(req), String(req.params.id)));
      },
    ),
  );
  return r;
}
