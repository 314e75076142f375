import { type Route, route } from "../lib/route.ts";
import { endpointSchema, endpointWithSecretSchema, idParams, pageOf } from "../lib/schemas.ts";
import {
  createEndpoint,
  createEndpointBody,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  listEndpointsQuery,
  parseCreateEndpointBody,
  parseEndpointPatch,
  updateEndpoint,
  updateEndpointSchema,
} from "../ops/endpoints.ts";

const tag = "Endpoints";
const notFound = { 404: "Not found or not the caller's" };

export const endpointsRoutes: Route[] = [
  route({
    method: "GET",
    path: "/endpoints",
    doc: {
      tag,
      summary: "List endpoints, newest first (secrets are never returned)",
      query: listEndpointsQuery,
      responses: { 200: { description: "A page of endpoints", schema: pageOf(endpointSchema) } },
    },
    handle: (ctx, { account, query }) => listEndpoints(ctx, account, query),
  }),
  route({
    method: "POST",
    path: "/endpoints",
    doc: {
      tag,
      summary: "Create a webhook, Slack or Discord endpoint; the signing secret is shown once",
      body: createEndpointBody,
      responses: { 201: { description: "The endpoint with its secret", schema: endpointWithSecretSchema } },
    },
    // Each kind's schema words its own problems (a union's message would not name the field).
    bodyCheckedBy: "operation",
    handle: (ctx, { account, body }) => createEndpoint(ctx, account, parseCreateEndpointBody(body)),
  }),
  route({
    method: "GET",
    path: "/endpoints/:id",
    doc: {
      tag,
      summary: "Get an endpoint (without its secret)",
      params: idParams,
      responses: { 200: { description: "The endpoint", schema: endpointSchema } },
      errors: notFound,
    },
    handle: (ctx, { account, params }) => getEndpoint(ctx, account, params.id),
  }),
  route({
    method: "PATCH",
    path: "/endpoints/:id",
    doc: {
      tag,
      summary: "Change an endpoint's settings",
      params: idParams,
      body: updateEndpointSchema,
      responses: { 200: { description: "The endpoint", schema: endpointSchema } },
      errors: notFound,
    },
    // Which fields are allowed depends on the stored endpoint's type (email destinations have no headers).
    bodyCheckedBy: "operation",
    handle: async (ctx, { account, params, body }) =>
      updateEndpoint(ctx, await parseEndpointPatch(ctx, account, params.id, body)),
  }),
  route({
    method: "DELETE",
    path: "/endpoints/:id",
    doc: {
      tag,
      summary: "Delete an endpoint; refused while an address, catch-all or shield rule uses it",
      params: idParams,
      responses: { 204: { description: "Deleted" } },
      errors: { 404: "Not found or not the caller's", 409: "The endpoint is still in use" },
    },
    handle: (ctx, { account, params }) => deleteEndpoint(ctx, account, params.id),
  }),
];
