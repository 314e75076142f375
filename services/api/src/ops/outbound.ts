import { createHash } from "node:crypto";
import {
  AppError,
  createDkimKey,
  dkimSelectorFor,
  emailView,
  invalid,
  newMessageId,
  replyRecipients,
  replyReferences,
  replySubject,
} from "@mailroom/core";
import { newId, type Prisma } from "@mailroom/db";
import { z } from "zod";
import { type Outcome, requestFingerprint, runIdempotent } from "../lib/idempotency.ts";
import type { OpsContext } from "./context.ts";
import { getAttachment } from "./emails.ts";

/** Decoded bytes of all attachments of one message (Postmark's and SES's limit). */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
export const MAX_ATTACHMENTS = 20;
export const MAX_RECIPIENTS = 50;
/** JSON body limit for the send routes: base64 attachments plus text and HTML bodies. */
export const OUTBOUND_BODY_LIMIT = "16mb";
const MAX_BODY_CHARS = 1_000_000;

const EMAIL = /^[^\s@<>(),;:"[\]\\]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;
// A flat character class: a nested-group pattern overflows the regex stack on a 13 MB string.
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;
const isBase64 = (s: string) => s.length % 4 === 0 && BASE64_CHARS.test(s);
const ONE_LINE = /^[^\r\n]*$/;

const address = z
  .string({ error: "must be an email address" })
  .trim()
  .toLowerCase()
  .max(254, "must be at most 254 characters")
  .regex(EMAIL, "must be an email address");
const recipients = z.array(address, { error: "must be an array of email addresses" }).max(MAX_RECIPIENTS, {
  message: `must have at most ${MAX_RECIPIENTS} addresses`,
});
/**
 * An attachment given by content (base64, with a filename), or by reference to one already stored:
 * `emailId` and `index`, the attachment `GET /emails/{emailId}/attachments/{index}` serves (any email
 * of the account, inbound or outbound); its filename and type are kept unless given.
 */
const attachment = z
  .object({
    filename: z
      .string({ error: "must be a string" })
      .min(1, "must not be empty")
      .max(255, "must be at most 255 characters")
      .regex(ONE_LINE, "must be one line")
      .optional()
      .describe("the file's name as the recipient sees it; required with content, else the stored one's"),
    contentType: z
      .string({ error: "must be a MIME type" })
      .regex(/^[\w.+-]+\/[\w.+-]+$/, "must be a MIME type such as text/csv")
      .optional()
      .describe("MIME type such as application/pdf; default: application/octet-stream, or the stored file's type"),
    content: z
      .string({ error: "must be a base64 string" })
      .refine(isBase64, "must be base64")
      .optional()
      .describe("the file's bytes, base64; or give emailId and index instead"),
    emailId: z
      .string({ error: "must be an email id (em_…)" })
      .min(1, "must not be empty")
      .optional()
      .describe("attach a stored file: the email (em_…) that has it, with index"),
    index: z
      .number({ error: "must be the attachment's position (0, 1, …)" })
      .int("must be a whole number")
      .min(0, "must be 0 or more")
      .optional()
      .describe("attach a stored file: its 0-based position in that email's attachments"),
  })
  .strict()
  .superRefine((a, c) => {
    const byRef = a.emailId !== undefined || a.index !== undefined;
    if (a.content !== undefined) {
      if (byRef)
        c.addIssue({ code: "custom", path: ["content"], message: "give content or emailId and index, not both" });
      else if (a.filename === undefined) c.addIssue({ code: "custom", path: ["filename"], message: "is required" });
    } else if (!byRef) {
      c.addIssue({ code: "custom", path: ["content"], message: "is required (base64), or emailId and index" });
    } else if (a.emailId === undefined || a.index === undefined) {
      c.addIssue({ code: "custom", path: [a.emailId === undefined ? "emailId" : "index"], message: "is required" });
    }
  });
const bodyFields = {
  text: z
    .string({ error: "must be a string" })
    .max(MAX_BODY_CHARS, "is too long")
    .optional()
    .describe("the plain-text body; text or html (or both) is required"),
  html: z
    .string({ error: "must be a string" })
    .max(MAX_BODY_CHARS, "is too long")
    .optional()
    .describe("the HTML body; text or html (or both) is required"),
  cc: recipients.optional().describe(`more recipients in Cc (email addresses, at most ${MAX_RECIPIENTS})`),
  fromName: z
    .string()
    .max(200, "must be at most 200 characters")
    .regex(ONE_LINE, "must be one line")
    .optional()
    .describe('the sender\'s display name, as in "Support Team <support@…>"'),
  attachments: z
    .array(attachment, { error: "must be an array" })
    .max(MAX_ATTACHMENTS, `must have at most ${MAX_ATTACHMENTS} items`)
    .optional()
    .describe(`files to attach, at most ${MAX_ATTACHMENTS}, 10 MB in total`),
};
const needsBody = (b: { text?: string; html?: string }) => Boolean(b.text || b.html);
const bodyRequired = { message: "text or html is required", path: ["text"] };

export const replySchema = z
  .object({
    ...bodyFields,
    replyAll: z
      .boolean({ error: "must be true or false" })
      .optional()
      .describe("also answer the other To and Cc recipients of the email (default: only its sender)"),
  })
  .strict()
  .refine(needsBody, bodyRequired);

export const sendSchema = z
  .object({
    ...bodyFields,
    from: address.describe(
      "the sending address: an active inbox of the account, or any address of a catch-all domain, on a verified domain",
    ),
    to: z
      .union([address, recipients.min(1, "must have at least one address")], {
        error: "must be an email address or an array of them",
      })
      .describe(`the recipient, or an array of up to ${MAX_RECIPIENTS} recipients`),
    subject: z
      .string({ error: "is required" })
      .min(1, "must not be empty")
      .max(998, "must be at most 998 characters")
      .regex(ONE_LINE, "must be one line")
      .describe("one line, up to 998 characters"),
  })
  .strict()
  .refine(needsBody, bodyRequired);

type Draft = {
  accountId: string;
  domain: { id: string; domain: string };
  addressId: string | null;
  threadId: string | null;
  from: string;
  fromName: string | null;
  to: string[];
  cc: string[];
  subject: string;
  text: string;
  html: string;
  inReplyTo: string | null;
  references: string[];
  attachments: { filename: string; contentType: string; content: Buffer }[];
};

async function decodeAttachments(ctx: OpsContext, accountId: string, list: z.infer<typeof attachment>[] = []) {
  // Inline content is decoded; references are looked up (size only), so an oversized request reads no bytes.
  const items = await Promise.all(
    list.map(async (a, i) => {
      if (a.emailId === undefined || a.index === undefined) {
        return { a, size: 0, content: Buffer.from(a.content ?? "", "base64") };
      }
      const row = await ctx.prisma.attachment.findFirst({
        where: { emailId: a.emailId, index: a.index, email: { accountId } },
        select: { size: true },
      });
      if (!row) throw invalid(`attachments.${i}: email ${a.emailId} has no attachment ${a.index}`);
      return { a, size: row.size, content: null };
    }),
  );
  const total = items.reduce((n, it) => n + (it.content?.length ?? it.size), 0);
  if (total > MAX_ATTACHMENT_BYTES) {
    throw new AppError(
      "payload_too_large",
      `attachments: ${total} bytes in total, more than the ${MAX_ATTACHMENT_BYTES}-byte limit`,
    );
  }
  const out: { filename: string; contentType: string; content: Buffer }[] = [];
  for (const [i, { a, content }] of items.entries()) {
    if (content) {
      out.push({
        filename: a.filename as string,
        contentType: a.contentType?.toLowerCase() ?? "application/octet-stream",
        content,
      });
      continue;
    }
    // The download route's own read: the same account check, the bytes read around Prisma.
    const got = await getAttachment(ctx, accountId, a.emailId as string, a.index as number).catch((err: unknown) => {
      throw err instanceof AppError ? invalid(`attachments.${i}: ${err.message}`) : err;
    });
    out.push({
      filename: a.filename ?? got.filename,
      contentType: a.contentType?.toLowerCase() ?? got.contentType,
      content: Buffer.from(got.content.buffer, got.content.byteOffset, got.content.byteLength),
    });
  }
  return out;
}

/** Mail leaves only from verified domains: their DKIM CNAME is live, so the signature can verify. */
async function sendingDomain(ctx: OpsContext, accountId: string, domainId: string | null, field: string) {
  const d = domainId ? await ctx.prisma.domain.findFirst({ where: { id: domainId, accountId } }) : null;
  if (!d) throw invalid(`${field}: the domain is not one of your domains`);
  if (d.status !== "verified") throw new AppError("conflict", `${field}: ${d.domain} is not verified yet`);
  if (!d.dkimPrivateKey) {
    // Domains registered before outbound mail existed get their key on first use.
    const key = await createDkimKey(dkimSelectorFor(d.dkimTokens) as string);
    await ctx.prisma.domain.updateMany({
      where: { id: d.id, dkimPrivateKey: null },
      data: { dkimSelector: key.selector, dkimPrivateKey: key.privateKey, dkimPublicKey: key.publicKey },
    });
  }
  return d;
}

async function store(tx: Prisma.TransactionClient, draft: Draft, fingerprint: string, publicApiUrl: string) {
  const now = new Date();
  let threadId = draft.threadId;
  if (threadId) await tx.thread.update({ where: { id: threadId }, data: { lastMessageAt: now } });
  else {
    threadId = newId("thread");
    await tx.thread.create({
      data: { id: threadId, accountId: draft.accountId, subject: draft.subject, lastMessageAt: now, createdAt: now },
    });
  }
  const row = await tx.email.create({
    data: {
      id: newId("email"),
      accountId: draft.accountId,
      domainId: draft.domain.id,
      addressId: draft.addressId,
      threadId,
      direction: "outbound",
      messageId: newMessageId(draft.domain.domain),
      inReplyTo: draft.inReplyTo,
      references: draft.references,
      fromAddress: draft.from,
      fromName: draft.fromName,
      toAddresses: draft.to,
      ccAddresses: draft.cc,
      replyTo: [],
      subject: draft.subject,
      textBody: draft.text,
      htmlBody: draft.html,
      // Outbound mail is not scanned or authenticated by us: see docs/decisions.md (issue 9).
      spamVerdict: null,
      spfVerdict: "DISABLED",
      dkimVerdict: "DISABLED",
      dmarcVerdict: "DISABLED",
      arcVerdict: "DISABLED",
      virusVerdict: "DISABLED",
      contentHash: fingerprint,
      receivedAt: now,
      sendStatus: "queued",
      sendNextAttemptAt: now,
    },
  });
  const attachments = draft.attachments.map((a, index) => ({
    id: newId("attachment"),
    emailId: row.id,
    index,
    filename: a.filename,
    contentType: a.contentType,
    size: a.content.length,
    disposition: "attachment",
    checksum: createHash("md5").update(a.content).digest("hex"),
    content: new Uint8Array(a.content),
    stored: true,
  }));
  if (attachments.length) await tx.attachment.createMany({ data: attachments });
  return { status: 201, body: emailView(row, attachments, publicApiUrl) };
}

async function submit(ctx: OpsContext, draft: Draft, key: string | null, fingerprint: string): Promise<Outcome> {
  const out = await runIdempotent(ctx.prisma, draft.accountId, key, fingerprint, (tx) =>
    store(tx, draft, fingerprint, ctx.config.publicApiUrl),
  );
  const emailId = (out.body as { id?: string }).id;
  if (!out.replayed && emailId && ctx.enqueueOutbound) {
    // Stored as `queued`: if Redis is down now, the sender's sweeper queues it later.
    await ctx.enqueueOutbound(emailId).catch((err: Error) => {
      ctx.logger.warn({ emailId, err: err.message }, "outbound enqueue failed; the sweeper will retry");
    });
  }
  return out;
}

/** POST /emails/{id}/reply: answers from the address that received the message, in its thread. */
export async function replyToEmail(
  ctx: OpsContext,
  accountId: string,
  id: string,
  input: z.output<typeof replySchema>,
  key: string | null,
): Promise<Outcome> {
  const parent = await ctx.prisma.email.findFirst({ where: { id, accountId } });
  if (!parent) throw new AppError("not_found", "Email not found");
  const self = parent.direction === "outbound" ? parent.fromAddress : (parent.recipient ?? parent.toAddresses[0]);
  if (!self) throw invalid("id: this email has no receiving address to reply from");
  const domain = await sendingDomain(ctx, accountId, parent.domainId, "id");
  const { to, cc } = replyRecipients(parent, self, { replyAll: input.replyAll ?? false, cc: input.cc ?? [] });
  if (to.length === 0) throw invalid("id: the original message has no address to reply to");
  const draft: Draft = {
    accountId,
    domain,
    addressId: parent.addressId,
    threadId: parent.threadId,
    from: self,
    fromName: input.fromName ?? (parent.direction === "outbound" ? parent.fromName : null),
    to,
    cc,
    subject: replySubject(parent.subject),
    text: input.text ?? "",
    html: input.html ?? "",
    inReplyTo: parent.messageId,
    references: replyReferences(parent),
    attachments: await decodeAttachments(ctx, accountId, input.attachments),
  };
  return submit(ctx, draft, key, requestFingerprint("POST", `/emails/${id}/reply`, input));
}

/** POST /emails: a new message from one of the account's addresses on a verified domain; starts a thread. */
export async function sendEmail(
  ctx: OpsContext,
  accountId: string,
  input: z.output<typeof sendSchema>,
  key: string | null,
) {
  const at = input.from.lastIndexOf("@");
  const localPart = input.from.slice(0, at);
  const d = await ctx.prisma.domain.findFirst({ where: { accountId, domain: input.from.slice(at + 1) } });
  const domain = await sendingDomain(ctx, accountId, d?.id ?? null, "from");
  const addr = await ctx.prisma.address.findUnique({
    where: { domainId_localPart: { domainId: domain.id, localPart } },
  });
  // An explicit active address, or any local part the domain's catch-all receives (replies come back).
  if (!(addr?.active || (!addr && domain.catchAllEnabled))) {
    throw invalid(`from: ${input.from} is not an active address of yours`);
  }
  const to = typeof input.to === "string" ? [input.to] : [...new Set(input.to)];
  const draft: Draft = {
    accountId,
    domain,
    addressId: addr?.id ?? null,
    threadId: null,
    from: input.from,
    fromName: input.fromName ?? null,
    to,
    cc: [...new Set(input.cc ?? [])].filter((a) => !to.includes(a)),
    subject: input.subject,
    text: input.text ?? "",
    html: input.html ?? "",
    inReplyTo: null,
    references: [],
    attachments: await decodeAttachments(ctx, accountId, input.attachments),
  };
  return submit(ctx, draft, key, requestFingerprint("POST", "/emails", input));
}
