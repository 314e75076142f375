/** `list_deliveries` / `get_delivery`: the delivery history of the account's endpoints; `retry_deliveries`: bulk replay. */
import { getDelivery, listDeliveries, listDeliveriesQuery } from "../ops/deliveries.ts";
import { bulkRetryBody, retryDeliveries } from "../ops/delivery-replay.ts";
import { asQuery, idInput, readTool, type ToolDef, writeTool } from "./tool.ts";

export const deliveryTools: ToolDef[] = [
  readTool({
    name: "list_deliveries",
    title: "List webhook deliveries",
    description:
      "List deliveries, newest first: one per email and endpoint, with status (pending, retrying, delivered, " +
      "dead), attempts made and allowed, the last HTTP status or error and when the next attempt is due. " +
      "Filter by emailId, endpointId or status (e.g. status dead to find failed deliveries). Returns " +
      "`{ data, nextCursor }`; pass `nextCursor` back as `cursor` for the next page.",
    input: listDeliveriesQuery,
    run: (ctx, accountId, args) => listDeliveries(ctx, accountId, asQuery(listDeliveriesQuery, args)),
  }),
  readTool({
    name: "get_delivery",
    title: "Get a delivery",
    description:
      "Get one delivery by id with every attempt (oldest first): HTTP status, duration, error and the start of " +
      "the endpoint's response body. Use it to find out why a webhook failed.",
    input: idInput("delivery", "dlv"),
    run: (ctx, accountId, { id }) => getDelivery(ctx, accountId, id),
  }),
  writeTool({
    name: "retry_deliveries",
    title: "Replay dead webhook deliveries",
    description:
      "Re-queue every dead delivery matching the filter (endpointId, since/until on the delivery's creation time; " +
      "all optional) with a fresh attempt budget under the same delivery id, e.g. after an endpoint was down. " +
      "Returns `{ retried }`, the number re-opened. Safe to repeat: a second call finds nothing more to replay.",
    input: bulkRetryBody,
    destructive: false,
    idempotent: true,
    run: (ctx, accountId, args) => retryDeliveries(ctx, accountId, args),
  }),
];
