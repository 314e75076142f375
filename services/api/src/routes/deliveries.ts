import { type Route, route } from "../lib/route.ts";
import { idParams, pageOf } from "../lib/schemas.ts";
import {
  deliverySchema,
  deliveryWithAttemptsSchema,
  getDelivery,
  listDeliveries,
  listDeliveriesQuery,
  retryDelivery,
} from "../ops/deliveries.ts";
import { bulkRetryBody, bulkRetryResultSchema, retryDeliveries } from "../ops/delivery-replay.ts";

const tag = "Deliveries";

export const deliveriesRoutes: Route[] = [
  route({
    method: "GET",
    path: "/deliveries",
    doc: {
      tag,
      summary: "List deliveries, newest first; filter by emailId, endpointId and status",
      query: listDeliveriesQuery,
      responses: { 200: { description: "A page of deliveries", schema: pageOf(deliverySchema) } },
      errors: { 400: "Invalid filter or `Invalid cursor`" },
    },
    handle: (ctx, { account, query }) => listDeliveries(ctx, account, query),
  }),
  route({
    method: "GET",
    path: "/deliveries/:id",
    doc: {
      tag,
      summary: "Get a delivery with every attempt (status code, duration, error, response excerpt)",
      params: idParams,
      responses: { 200: { description: "The delivery and its attempts", schema: deliveryWithAttemptsSchema } },
      errors: { 404: "Not found or not the caller's" },
    },
    handle: (ctx, { account, params }) => getDelivery(ctx, account, params.id),
  }),
  route({
    method: "POST",
    path: "/deliveries/retry",
    doc: {
      tag,
      summary: "Replay every dead delivery matching a filter (endpointId, since/until) with a fresh attempt budget",
      description:
        "Each match is re-opened as `POST /deliveries/{id}/retry` would (same delivery id, backoff from 1 minute). " +
        "Safe to repeat: re-opened deliveries are no longer dead, so a second call replays none of them again.",
      body: bulkRetryBody,
      responses: { 200: { description: "How many deliveries were re-opened", schema: bulkRetryResultSchema } },
    },
    handle: (ctx, { account, body }) => retryDeliveries(ctx, account, body),
  }),
  route({
    method: "POST",
    path: "/deliveries/:id/retry",
    doc: {
      tag,
      summary: "Re-open a dead or delivered delivery with a fresh attempt budget (same delivery id)",
      params: idParams,
      responses: { 200: { description: "The re-opened delivery", schema: deliveryWithAttemptsSchema } },
      errors: { 404: "Not found or not the caller's", 409: "The delivery is still pending or retrying" },
    },
    handle: (ctx, { account, params }) => retryDelivery(ctx, account, params.id),
  }),
];
