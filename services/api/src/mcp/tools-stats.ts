/** `get_stats` / `get_endpoint_health`: what an agent asks first when mail or webhooks seem off. */
import { getEndpointHealth } from "../ops/endpoint-health.ts";
import { getStats, statsQuery } from "../ops/stats.ts";
import { idInput, readTool, type ToolDef } from "./tool.ts";

export const statsTools: ToolDef[] = [
  readTool({
    name: "get_stats",
    title: "Get mail and delivery statistics",
    description:
      "Mail received per hour over the last 24 hours (window 24h) or per UTC day over the last 30 days " +
      "(window 30d), split into stored, blocked (shield rule) and processingFailed; deliveries by outcome " +
      "(succeeded, retrying, dead, pending); delivery attempt latency p50/p95 in milliseconds. Returns " +
      "`{ buckets, totals }`. Use it to tell whether mail is flowing and whether webhooks are failing or slow.",
    input: statsQuery,
    run: (ctx, accountId, args) => getStats(ctx, accountId, args),
  }),
  readTool({
    name: "get_endpoint_health",
    title: "Get an endpoint's health",
    description:
      "One endpoint's last 24 hours: attempts, success rate, latency p50/p95, the latest failed attempts with " +
      "HTTP status, error and the start of the response body, since when it has been failing (null when its " +
      "latest attempt succeeded) and its backlog of pending and retrying deliveries.",
    input: idInput("endpoint", "ep"),
    run: (ctx, accountId, { id }) => getEndpointHealth(ctx, accountId, id),
  }),
];
