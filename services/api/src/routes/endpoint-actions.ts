import { type Route, route } from "../lib/route.ts";
import { endpointWithSecretSchema, idParams, timestamp } from "../lib/schemas.ts";
import { endpointTestResultSchema, rotateEndpointSecret, testEndpoint } from "../ops/endpoint-actions.ts";

const tag = "Endpoints";

const rotatedSchema = endpointWithSecretSchema
  .extend({
    previousSecretExpiresAt: timestamp.describe("until then the previous secret signs too (two v1= entries)"),
  })
  .meta({ id: "EndpointRotatedSecret" });

export const endpointActionsRoutes: Route[] = [
  route({
    method: "POST",
    path: "/endpoints/:id/test",
    doc: {
      tag,
      summary: "Send one sample signed email.received delivery now; nothing is stored",
      params: idParams,
      responses: { 200: { description: "What the endpoint answered", schema: endpointTestResultSchema } },
      errors: { 400: "An email destination (no HTTP request to test)", 404: "Not found or not the caller's" },
    },
    handle: (ctx, { account, params }) => testEndpoint(ctx, account, params.id),
  }),
  route({
    method: "POST",
    path: "/endpoints/:id/rotate-secret",
    doc: {
      tag,
      summary: "Replace the signing secret (shown once); the old one keeps signing for 24 hours",
      params: idParams,
      responses: { 200: { description: "The endpoint with its new secret", schema: rotatedSchema } },
      errors: { 404: "Not found or not the caller's", 409: "Rotated concurrently" },
    },
    handle: (ctx, { account, params }) => rotateEndpointSecret(ctx, account, params.id),
  }),
];
