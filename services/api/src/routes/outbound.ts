import type { RequestHandler, Response } from "express";
import { idempotencyKeyOf, type Outcome } from "../lib/idempotency.ts";
import { jsonBody } from "../lib/json-body.ts";
import { type Route, route } from "../lib/route.ts";
import { emailSchema, idParams } from "../lib/schemas.ts";
import { OUTBOUND_BODY_LIMIT, replySchema, replyToEmail, sendEmail, sendSchema } from "../ops/outbound.ts";

const tag = "Emails";
const SEND_PATH = /^\/emails(?:\/[^/]+\/reply)?\/?$/;
const IDEMPOTENCY =
  "Send an `Idempotency-Key` header (1 to 255 visible ASCII characters) to make retries safe: the same key " +
  "with the same request within 24 hours returns the first response (header `Idempotent-Replayed: true`) " +
  "and sends nothing; the same key with a different request is refused with 409.";

/**
 * The send routes carry base64 attachments, so they get a larger JSON limit than the API's default.
 * Mounted before the general parser, which then sees the body as already parsed.
 */
export function outboundBodyParser(): RequestHandler {
  const json = jsonBody({ limit: OUTBOUND_BODY_LIMIT, anyType: true });
  return (req, res, next) => (req.method === "POST" && SEND_PATH.test(req.path) ? json(req, res, next) : next());
}

function respond(res: Response, out: Outcome) {
  if (out.replayed) res.setHeader("Idempotent-Replayed", "true");
  res.status(out.status).json(out.body);
}

export const outboundRoutes: Route[] = [
  route({
    method: "POST",
    path: "/emails/:id/reply",
    doc: {
      tag,
      summary: "Reply to an email from the address that received it, in the same thread",
      description: `Queues the reply for the SMTP relay; \`send.status\` follows it. ${IDEMPOTENCY}`,
      params: idParams,
      body: replySchema,
      responses: { 201: { description: "The outbound email, queued", schema: emailSchema } },
      errors: {
        400: "Invalid body (the message names the field)",
        404: "Email not found or not the caller's",
        409: "The domain is not verified, or the Idempotency-Key was used with another request",
        413: "Attachments larger than 10 MB in total",
      },
    },
    sends: "itself",
    handle: async (ctx, { req, res, account, params, body }) => {
      const key = idempotencyKeyOf(req.header("idempotency-key"));
      respond(res, await replyToEmail(ctx, account, params.id, body, key));
    },
  }),
  route({
    method: "POST",
    path: "/emails",
    doc: {
      tag,
      summary: "Send a new email from one of your addresses on a verified domain; starts a thread",
      description: `Queues the message for the SMTP relay; \`send.status\` follows it. ${IDEMPOTENCY}`,
      body: sendSchema,
      responses: { 201: { description: "The outbound email, queued", schema: emailSchema } },
      errors: {
        400: "Invalid body, or `from` is not an active address of yours",
        409: "The domain is not verified, or the Idempotency-Key was used with another request",
        413: "Attachments larger than 10 MB in total",
      },
    },
    sends: "itself",
    handle: async (ctx, { req, res, account, body }) => {
      const key = idempotencyKeyOf(req.header("idempotency-key"));
      respond(res, await sendEmail(ctx, account, body, key));
    },
  }),
];
