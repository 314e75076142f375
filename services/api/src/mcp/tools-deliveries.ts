/** `list_deliveries` / `get_delivery`: the delivery history of the account's endpoints. */
import { getDelivery, listDeliveries, listDeliveriesQuery } from "../ops/deliveries.ts";
import { asQuery, idInput, readTool, type ToolDef } from "./tool.ts";

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
    run: (ctx, accountId, args) => listDeliveries(ctx, accountId, asQuery(args)),
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
];
