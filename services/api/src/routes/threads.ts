import { accountOf } from "../lib/http.ts";
import { type Route, route } from "../lib/route.ts";
import { idParams, pageOf, threadSchema, threadSummarySchema } from "../lib/schemas.ts";
import { getThread, listThreads, listThreadsQuery } from "../ops/emails.ts";

const tag = "Threads";

export const threadsRoutes: Route[] = [
  route({
    method: "GET",
    path: "/threads",
    doc: {
      tag,
      summary: "List threads, newest activity first",
      query: listThreadsQuery,
      responses: { 200: { description: "A page of threads", schema: pageOf(threadSummarySchema) } },
    },
    handle: async (ctx, { req, res }) => {
      res.json(await listThreads(ctx, accountOf(req), req.query));
    },
  }),
  route({
    method: "GET",
    path: "/threads/:id",
    doc: {
      tag,
      summary: "A thread's messages, oldest first, inbound and outbound",
      params: idParams,
      responses: { 200: { description: "The thread", schema: threadSchema } },
      errors: { 404: "No messages, or not the caller's" },
    },
    handle: async (ctx, { req, res, params }) => {
      res.json(await getThread(ctx, accountOf(req), params.id));
    },
  }),
];
