/**
 * The mail tools of issue 18: send_email and reply_to_email (the service functions behind
 * `POST /emails` and `POST /emails/{id}/reply`, with their schemas, limits, idempotency and
 * messages) and wait_for_email (events/wait.ts).
 */
import { z } from "zod";
import { waitForEmail, waitForEmailInput } from "../events/wait.ts";
import { parse } from "../lib/http.ts";
import { idempotencyKeyOf } from "../lib/idempotency.ts";
import { replySchema, replyToEmail, sendEmail, sendSchema } from "../ops/outbound.ts";
import { readTool, type ToolDef, writeTool } from "./tool.ts";

const idempotencyKey = z
  .string({ error: "must be a string" })
  .optional()
  .describe(
    "makes retries safe, like the REST Idempotency-Key header: the same key with the same arguments within " +
      "24 hours returns the first result and sends nothing more; with different arguments it is refused",
  );

// The REST body's fields as the tool's arguments (same field schemas, same messages). Spreading the
// shape drops the body schema's rules across fields (text or html required), so `run` parses the
// body with the REST schema itself: the same check and the same message as POST /emails.
const sendInput = z.object({ ...sendSchema.shape, idempotencyKey }).strict();
const replyInput = z
  .object({
    id: z.string({ error: "is required and must be an email id (em_…)" }).min(1).describe("the email to answer (em_…)"),
    ...replySchema.shape,
    idempotencyKey,
  })
  .strict();

const keyOf = (key: string | undefined) => (key === undefined ? null : idempotencyKeyOf(key));

const ATTACHMENTS =
  "Attachments: `{ filename, contentType?, content }` with base64 content, or `{ emailId, index }` to attach " +
  "one already stored (as listed in that email's `attachments`, 0-based). 10 MB in total.";

export const mailTools: ToolDef[] = [
  writeTool({
    name: "send_email",
    title: "Send an email",
    description:
      "Send a new email from one of the account's addresses (an active inbox, or any address of a catch-all " +
      "domain) on a verified domain; it starts a new thread. Give text and/or html. Returns the outbound email " +
      `with send.status "queued"; get_email shows it move to "sent". ${ATTACHMENTS} Needs a full-access API key.`,
    input: sendInput,
    destructive: false,
    idempotent: false,
    run: async (ctx, accountId, { idempotencyKey: key, ...body }) =>
      (await sendEmail(ctx, accountId, parse(sendSchema, body), keyOf(key))).body as object,
  }),
  writeTool({
    name: "reply_to_email",
    title: "Reply to an email",
    description:
      "Reply to an email (id from list_emails, get_email or wait_for_email) from the address that received " +
      "it, in the same thread: subject `Re: …`, In-Reply-To and References set, so the answer threads back " +
      "here too. `replyAll` also answers the other To/Cc recipients; `cc` adds more. " +
      `${ATTACHMENTS} Needs a full-access API key.`,
    input: replyInput,
    destructive: false,
    idempotent: false,
    run: async (ctx, accountId, { id, idempotencyKey: key, ...body }) =>
      (await replyToEmail(ctx, accountId, id, parse(replySchema, body), keyOf(key))).body as object,
  }),
  readTool({
    name: "wait_for_email",
    title: "Wait for an email",
    description:
      "Wait until an email matching the filter arrives, up to timeoutSeconds (at most 120; give your MCP client " +
      "a request timeout longer than that). Filters (all optional, combined with AND): `address` (the inbox), " +
      "`domain`, `from` (address or @domain), `subjectContains`, `receivedAfter`. Without receivedAfter only " +
      "mail stored after the call starts counts; to not miss mail that may already have arrived (you triggered " +
      "it before calling), pass receivedAfter = a time before the trigger. Returns `{ email, timedOut }`: the " +
      "Email object (as get_email), or `email: null, timedOut: true`; then simply call again.",
    input: waitForEmailInput,
    run: (ctx, accountId, args, signal) => waitForEmail(ctx, accountId, args, signal),
  }),
];
