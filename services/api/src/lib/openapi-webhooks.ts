import { emailReceivedEventSchema } from "@mailroom/core";
import type { z } from "zod";

type JsonSchema = Record<string, unknown>;
type Convert = (schema: z.ZodType, io: "input" | "output") => JsonSchema;

const header = (description: string, example?: string) => ({
  required: true,
  description,
  schema: { type: "string", ...(example ? { examples: [example] } : {}) },
});

/**
 * OpenAPI 3.1 `webhooks`: what mailroom POSTs to an endpoint. The body schema is converted from
 * `emailReceivedEventSchema`, the schema every payload is parsed through before it is sent.
 * docs/webhooks.md explains the headers and how to verify them.
 */
export function webhooksDoc(convert: Convert) {
  const headers = {
    "X-Service-Event": header("always `email.received`", "email.received"),
    "X-Service-Delivery-Id": header("the delivery id; the same on every retry of this delivery"),
    "X-Service-Signature": header(
      '`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`; the whole `whsec_…` string is the key; two `v1=` entries during a secret rotation (Stripe\'s scheme: `stripe.webhooks.constructEvent` verifies it)',
    ),
    "webhook-id": header("Standard Webhooks: the delivery id"),
    "webhook-timestamp": header("Standard Webhooks: unix seconds, the same `t` as in X-Service-Signature"),
    "webhook-signature": header(
      'Standard Webhooks: `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>`, key = the secret without `whsec_`, base64-decoded; space-separated entries during a rotation',
    ),
  };
  const parameters = Object.entries(headers).map(([name, h]) => ({ name, in: "header", ...h }));
  return {
    "email.received": {
      post: {
        summary: "Mail arrived for an address or catch-all routed to this endpoint",
        description:
          "Sent to webhook endpoints (Slack and Discord get a chat message instead). Legacy `X-Inbound-*` copies of the `X-Service-*` headers are sent too. Any 2xx is success; anything else is retried at 1 m, 5 m, 30 m and 2 h until `maxAttempts`, then the delivery is dead.",
        operationId: "emailReceived",
        parameters,
        requestBody: {
          required: true,
          content: { "application/json": { schema: convert(emailReceivedEventSchema, "output") } },
        },
        responses: {
          "2XX": { description: "Accepted: the delivery is done" },
          default: { description: "Any other status, a redirect or a timeout: the delivery is retried" },
        },
      },
    },
  };
}
