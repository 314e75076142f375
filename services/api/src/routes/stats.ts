import { type Route, route } from "../lib/route.ts";
import { idParams } from "../lib/schemas.ts";
import { endpointHealthSchema, getEndpointHealth } from "../ops/endpoint-health.ts";
import { getStats, statsQuery, statsSchema } from "../ops/stats.ts";

/** Aggregates for dashboards: the account's mail and deliveries over time, one endpoint's health. */
export const statsRoutes: Route[] = [
  route({
    method: "GET",
    path: "/stats",
    doc: {
      tag: "Stats",
      summary:
        "Mail received (stored, blocked, processing failed), deliveries by outcome and attempt latency over time",
      description:
        "`window=24h`: 24 hourly buckets ending with the current hour; `window=30d`: 30 daily buckets (UTC days) " +
        "ending today. Mail is bucketed by when it was received, deliveries by when they were created (in their " +
        "current state), latency by when each attempt started. Empty buckets are included.",
      query: statsQuery,
      responses: { 200: { description: "Buckets oldest first, and totals over the window", schema: statsSchema } },
      errors: { 400: "Invalid window" },
    },
    handle: (ctx, { account, query }) => getStats(ctx, account, query),
  }),
  route({
    method: "GET",
    path: "/endpoints/:id/health",
    doc: {
      tag: "Endpoints",
      summary: "An endpoint's last 24 hours: success rate, latency, latest failures, failing since, backlog",
      params: idParams,
      responses: { 200: { description: "The endpoint's health", schema: endpointHealthSchema } },
      errors: { 404: "Not found or not the caller's" },
    },
    handle: (ctx, { account, params }) => getEndpointHealth(ctx, account, params.id),
  }),
];
