import type { Response } from "express";
import { z } from "zod";
import { type Prefetch, takePrefetched } from "../lib/auth.ts";
import { emailEventsSchema } from "../lib/email-events-schema.ts";
import { type Route, route } from "../lib/route.ts";
import { emailSchema, emailSummarySchema, idParams, pageOf } from "../lib/schemas.ts";
import type { OpsContext } from "../ops/context.ts";
import { getEmailEvents } from "../ops/email-events.ts";
import {
  attachmentParams,
  getAttachment,
  getEmail,
  getRawEmail,
  listEmails,
  listEmailsByKey,
  listEmailsQuery,
} from "../ops/emails.ts";

const tag = "Emails";
const binary = z.string().meta({ format: "binary" });

/** A stored content type, or octet-stream when it is not a plain `type/subtype[; params]` value. */
const safeContentType = (ct: string): string =>
  /^[\w.+-]+\/[\w.+-]+(?:\s*;[\x20-\x7e]*)?$/.test(ct) && ct.length <= 200 ? ct : "application/octet-stream";

/** An attachment as a download, never rendered: an HTML attachment must not run in the API's origin. */
export function sendAttachment(res: Response, att: { filename: string; contentType: string; content: Uint8Array }) {
  res.attachment(att.filename);
  res.setHeader("Content-Type", safeContentType(att.contentType));
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.send(Buffer.from(att.content.buffer, att.content.byteOffset, att.content.byteLength));
}

/** Query parameters that leave the page on the (accountId, receivedAt, id) index whatever the account. */
const PLAIN_PAGE = new Set(["limit", "cursor"]);

/**
 * `GET /emails` (the API's hottest read) starts its page beside the key check: auth.ts Prefetch.
 * Only the plain page (limit, cursor): scoped by the key's hash, the account is unknown when the
 * statement is planned, which costs nothing on the keyset index but can turn a filter's plan
 * (`from=` on the largest account: 4.7 → 103 ms p50 in bench:api) into a bad one; filtered
 * lists wait for the key and are planned for their account, as before.
 */
export const prefetchEmailList =
  (ctx: OpsContext): Prefetch =>
  (req, keyHash) => {
    if (req.path !== "/emails" || !Object.keys(req.query).every((k) => PLAIN_PAGE.has(k))) return undefined;
    // A query the route will refuse is not prefetched: the route answers its 400.
    const q = listEmailsQuery.safeParse(req.query);
    return q.success ? listEmailsByKey(ctx, keyHash, q.data) : undefined;
  };

export const emailsRoutes: Route[] = [
  route({
    method: "GET",
    path: "/emails",
    doc: {
      tag,
      summary: "List emails, newest first by received time; filters and full-text search",
      query: listEmailsQuery,
      responses: { 200: { description: "A page of email summaries", schema: pageOf(emailSummarySchema) } },
    },
    handle: (ctx, { req, account, query }) => takePrefetched<unknown>(req) ?? listEmails(ctx, account, query),
  }),
  route({
    method: "GET",
    path: "/emails/:id",
    doc: {
      tag,
      summary: "Get an email",
      params: idParams,
      responses: { 200: { description: "The full email", schema: emailSchema } },
      errors: { 404: "Not found or not the caller's" },
    },
    handle: (ctx, { account, params }) => getEmail(ctx, account, params.id),
  }),
  route({
    method: "GET",
    path: "/emails/:id/events",
    doc: {
      tag,
      summary: "What happened to an email: received, verdicts, shield decision, stored, deliveries and attempts",
      params: idParams,
      responses: { 200: { description: "The email's timeline, in order", schema: emailEventsSchema } },
      errors: { 404: "Not found or not the caller's" },
    },
    handle: (ctx, { account, params }) => getEmailEvents(ctx, account, params.id),
  }),
  route({
    method: "GET",
    path: "/emails/:id/raw",
    doc: {
      tag,
      summary: "The raw MIME message as received",
      params: idParams,
      responses: { 200: { description: "The message", contentType: "message/rfc822", schema: binary } },
      errors: { 404: "Not found, not the caller's, or no raw message kept (outbound)" },
    },
    sends: "itself",
    handle: async (ctx, { res, account, params }) => {
      const raw = await getRawEmail(ctx, account, params.id);
      res.setHeader("Content-Type", "message/rfc822");
      res.setHeader("Content-Disposition", `attachment; filename="${params.id}.eml"`);
      res.setHeader("X-Content-Type-Options", "nosniff");
      res.send(Buffer.from(raw));
    },
  }),
  route({
    method: "GET",
    path: "/emails/:id/attachments/:n",
    doc: {
      tag,
      summary: "Download attachment n (0-based, the order of `attachments`)",
      params: attachmentParams,
      responses: {
        200: { description: "The attachment's bytes", contentType: "application/octet-stream", schema: binary },
      },
      errors: { 404: "Email or attachment not found, or the attachment was not stored" },
    },
    sends: "itself",
    handle: async (ctx, { res, account, params }) => {
      sendAttachment(res, await getAttachment(ctx, account, params.id, Number(params.n)));
    },
  }),
];
