import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented, type RouteDoc } from "../lib/route.ts";
import { endpointSchema, endpointWithSecretSchema, idParams, pageOf } from "../lib/schemas.ts";
import type { OpsContext } from "../ops/context.ts";
import {
  createEndpoint,
  createEndpointSchema,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  listEndpointsQuery,
  updateEndpoint,
  updateEndpointSchema,
} from "../ops/endpoints.ts";

const tag = "Endpoints";

/** What the OpenAPI document says about each route, by the operation it runs. */
const docs = {
  listEndpoints: {
    tag,
    summary: "List endpoints, newest first (secrets are never returned)",
    query: listEndpointsQuery,
    responses: { 200: { description: "A page of endpoints", schema: pageOf(endpointSchema) } },
  },
  createEndpoint: {
    tag,
    summary: "Create a webhook, Slack or Discord endpoint; the signing secret is shown once",
    body: createEndpointSchema,
    responses: { 201: { description: "The endpoint with its secret", schema: endpointWithSecretSchema } },
  },
  getEndpoint: {
    tag,
    summary: "Get an endpoint (without its secret)",
    params: idParams,
    responses: { 200: { description: "The endpoint", schema: endpointSchema } },
    errors: { 404: "Not found or not the caller's" },
  },
  updateEndpoint: {
    tag,
    summary: "Change an endpoint's settings",
    params: idParams,
    body: updateEndpointSchema,
    responses: { 200: { description: "The endpoint", schema: endpointSchema } },
    errors: { 404: "Not found or not the caller's" },
  },
  deleteEndpoint: {
    tag,
    summary: "Delete an endpoint; refused while an address, catch-all or shield rule uses it",
    params: idParams,
    responses: { 204: { description: "Deleted" } },
    errors: { 404: "Not found or not the caller's", 409: "The endpoint is still in use" },
  },
} satisfies Record<string, RouteDoc>;

export function endpointsRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get(
    "/endpoints",
    documented(docs.listEndpoints, async (req, res) => {
      res.json(await listEndpoints(ctx, accountOf(req), req.query));
    }),
  );
  r.post(
    "/endpoints",
    documented(docs.createEndpoint, async (req, res) => {
      res.status(201).json(await createEndpoint(ctx, accountOf(req), req.body));
    }),
  );
  r.get(
    "/endpoints/:id",
    documented(docs.getEndpoint, async (req, res) => {
      res.json(await getEndpoint(ctx, accountOf(req), String(req.params.id)));
    }),
  );
  r.patch(
    "/endpoints/:id",
    documented(docs.updateEndpoint, async (req, res) => {
      res.json(await updateEndpoint(ctx, accountOf(req), String(req.params.id), req.body));
    }),
  );
  r.delete(
    "/endpoints/:id",
    documented(docs.deleteEndpoint, async (req, res) => {
      await deleteEndpoint(ctx, accountOf(req), String(req.params.id));
      res.status(204).end();
    }),
  );
  return r;
}
