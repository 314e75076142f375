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
    handle: (ctx, { account, query }) => listThreads(ctx, account, query),
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
    handle: (ctx, { account, params }) => getThread(ctx, account, params.id),
  }),
];
