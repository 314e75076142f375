import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented } from "../lib/route.ts";
import { endpointWithSecretSchema, idParams, timestamp } from "../lib/schemas.ts";
import type { OpsContext } from "../ops/context.ts";
import { endpointTestResultSchema, rotateEndpointSecret, testEndpoint } from "../ops/endpoint-actions.ts";

const tag = "Endpoints";

const rotatedSchema = endpointWithSecretSchema
  .extend({
    previousSecretExpiresAt: timestamp.describe("until then the previous secret signs too (two v1= entries)"),
  })
  .meta({ id: "EndpointRotatedSecret" });

export function endpointActionsRouter(ctx: OpsContext): Router {
  const r = Router();
  r.post(
    "/endpoints/:id/test",
    documented(
      {
        tag,
        summary: "Send one sample signed email.received delivery now; nothing is stored",
        params: idParams,
        responses: { 200: { description: "What the endpoint answered", schema: endpointTestResultSchema } },
        errors: { 400: "An email destination (no HTTP request to test)", 404: "Not found or not the caller's" },
      },
      async (req, res) => {
        res.json(await testEndpoint(ctx, accountOf(req), String(req.params.id)));
      },
    ),
  );
  r.post(
    "/endpoints/:id/rotate-secret",
    documented(
      {
        tag,
        summary: "Replace the signing secret (shown once); the old one keeps signing for 24 hours",
        params: idParams,
        responses: { 200: { description: "The endpoint with its new secret", schema: rotatedSchema } },
        errors: { 404: "Not found or not the caller's", 409: "Rotated concurrently" },
      },
      async (req, res) => {
        res.json(await rotateEndpointSecret(ctx, accountOf(req), String(req.params.id)));
      },
    ),
  );
  return r;
}
