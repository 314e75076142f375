import { AppError, type EmailSummaryRow, emailSummaryView, emailView } from "@mailroom/core";
import { Prisma, poolOf } from "@mailroom/db";
import { type ByteStore, postgresByteStore } from "@mailroom/storage";
import { z } from "zod";
import { decodeCursor, toPage } from "../lib/pagination.ts";
import { pageQueryShape } from "../lib/schemas.ts";
import type { OpsContext } from "./context.ts";
import { EMAIL_SEARCH_DOCUMENT } from "./email-search.ts";

const single = (what: string) => z.string({ error: `must be a single ${what}` }).min(1, "must not be empty");
const instant = z.iso.datetime({ offset: true, error: "must be an ISO 8601 timestamp, e.g. 2026-01-31T12:00:00Z" });

export const listEmailsQuery = z
  .object({
    ...pageQueryShape,
    threadId: single("thread id").optional().describe("only emails of this thread (thr_…)"),
    domainId: single("domain id").optional().describe("only emails received on this domain (dom_…)"),
    addressId: single("address id").optional().describe("only emails received at this inbox (addr_…)"),
    direction: z
      .enum(["inbound", "outbound"], "must be inbound or outbound")
      .optional()
      .describe("inbound: received mail; outbound: mail sent from the account"),
    from: single("string")
      .max(320, "must be at most 320 characters")
      .optional()
      .describe("case-insensitive substring of the sender address"),
    receivedAfter: instant.optional().describe("only emails received strictly after this instant"),
    receivedBefore: instant.optional().describe("only emails received strictly before this instant"),
    q: single("string")
      .max(200, "must be at most 200 characters")
      .optional()
      .describe('full-text search over subject, sender and text body (web-search syntax: words, "phrases", -not, or)'),
  })
  .strict();

const withCount = { _count: { select: { attachments: true } } } as const;

export async function listEmails(ctx: OpsContext, accountId: string, query: z.output<typeof listEmailsQuery>) {
  return listEmailsOf(ctx, accountId, query);
}

/**
 * The same page for the account of an API key, by the key's hash: started beside the key check
 * (auth.ts `prefetch`) so the request's two Postgres reads overlap. The statement is scoped to the
 * account of that key only while it is not revoked, so it can never return rows the key may not
 * read; its answer is used only after the key check has passed (and the rate limit counted).
 */
export function listEmailsByKey(ctx: OpsContext, keyHash: string, query: z.output<typeof listEmailsQuery>) {
  return listEmailsOf(
    ctx,
    Prisma.sql`(SELECT "accountId" FROM "api_keys" WHERE hash = ${keyHash} AND "revokedAt" IS NULL)`,
    query,
  );
}

async function listEmailsOf(ctx: OpsContext, account: string | Prisma.Sql, q: z.output<typeof listEmailsQuery>) {
  const pos = decodeCursor(ctx.cursors, q.cursor);
  // Straight on node-postgres (the pool under Prisma): the list is the API's hottest read, and
  // Prisma's raw-query path added ~1 ms of result mapping per page of 100 (bench:api, issue 13).
  const sql = emailListSql(account, q, pos);
  const { rows } = await poolOf(ctx.prisma).query<EmailSummaryRow & { attachmentCount: number }>(
    sql.text,
    sql.values as unknown[],
  );
  return toPage(
    ctx.cursors,
    rows,
    q.limit,
    (r) => r.receivedAt,
    (r) => emailSummaryView(r, r.attachmentCount),
  );
}

/**
 * One keyset query over (receivedAt desc, id desc), served by the (accountId, receivedAt desc, id desc)
 * index with the cursor in the index condition, so that a deep page costs what page 1 costs. It selects
 * only what a summary shows (not the bodies) and counts attachments beside each row. Exported so that
 * a test can EXPLAIN exactly this statement.
 */
export function emailListSql(
  account: string | Prisma.Sql,
  q: z.infer<typeof listEmailsQuery>,
  pos: { at: Date; id: string } | null,
): Prisma.Sql {
  const where: Prisma.Sql[] = [Prisma.sql`"accountId" = ${account}`];
  if (q.threadId) where.push(Prisma.sql`"threadId" = ${q.threadId}`);
  if (q.domainId) where.push(Prisma.sql`"domainId" = ${q.domainId}`);
  if (q.addressId) where.push(Prisma.sql`"addressId" = ${q.addressId}`);
  if (q.direction) where.push(Prisma.sql`"direction" = ${q.direction}`);
  if (q.from) where.push(Prisma.sql`"fromAddress" ILIKE ${`%${q.from.replace(/[\\%_]/g, "\\$&")}%`}`);
  if (q.receivedAfter) where.push(Prisma.sql`"receivedAt" > ${new Date(q.receivedAfter).toISOString()}::timestamptz`);
  if (q.receivedBefore) where.push(Prisma.sql`"receivedAt" < ${new Date(q.receivedBefore).toISOString()}::timestamptz`);
  if (q.q)
    where.push(Prisma.sql`${Prisma.raw(EMAIL_SEARCH_DOCUMENT)} @@ websearch_to_tsquery('simple'::regconfig, ${q.q})`);
  if (pos) where.push(Prisma.sql`("receivedAt", "id") < (${pos.at.toISOString()}::timestamptz, ${pos.id})`);
  return Prisma.sql`
    SELECT "id", "direction", "threadId", "messageId", "fromAddress", "toAddresses", "subject", "spamVerdict",
           "receivedAt", (SELECT count(*)::int FROM "attachments" a WHERE a."emailId" = "emails"."id") AS "attachmentCount"
      FROM "emails" WHERE ${Prisma.join(where, " AND ")}
     ORDER BY "receivedAt" DESC, "id" DESC LIMIT ${q.limit + 1}`;
}

export async function getEmail(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.email.findFirst({
    where: { id, accountId },
    include: {
      attachments: { select: { index: true, filename: true, contentType: true, size: true, stored: true } },
      spool: { select: { remoteIp: true, helo: true, tlsProtocol: true, tlsCipher: true } },
    },
  });
  if (!row) throw new AppError("not_found", "Email not found");
  return emailView(row, row.attachments, ctx.config.publicApiUrl);
}

/** The configured byte store; a context without one (tests, tools) reads the Postgres rows. */
const bytesOf = (ctx: OpsContext): ByteStore => ctx.bytes ?? postgresByteStore(poolOf(ctx.prisma));

/** The message exactly as it was accepted over SMTP (message/rfc822). */
export async function getRawEmail(ctx: OpsContext, accountId: string, id: string): Promise<Uint8Array> {
  const row = await ctx.prisma.email.findFirst({ where: { id, accountId }, select: { spoolId: true } });
  if (!row) throw new AppError("not_found", "Email not found");
  // Through the byte store: from Postgres in slices (a 35 MB message stays one buffer) or the object store.
  const raw = row.spoolId ? await bytesOf(ctx).readRaw(row.spoolId) : null;
  if (!raw) throw new AppError("not_found", "The raw message of this email is not available");
  return raw;
}

export const attachmentParams = z.object({
  id: z.string(),
  n: z
    .string()
    .regex(/^\d{1,4}$/, "must be the attachment's position (0, 1, …)")
    .describe("0-based position"),
});

export async function getAttachment(ctx: OpsContext, accountId: string, id: string, n: number) {
  const email = await ctx.prisma.email.findFirst({ where: { id, accountId }, select: { id: true } });
  if (!email) throw new AppError("not_found", "Email not found");
  const att = await ctx.prisma.attachment.findUnique({
    where: { emailId_index: { emailId: email.id, index: n } },
    omit: { content: true },
  });
  if (!att) throw new AppError("not_found", `Email has no attachment ${n}`);
  const content = att.stored ? await bytesOf(ctx).readAttachment({ id: att.id, emailId: email.id }) : null;
  if (!content) {
    throw new AppError("not_found", `Attachment ${n} (${att.filename}) was not stored and cannot be downloaded`);
  }
  return { filename: att.filename, contentType: att.contentType, content };
}

export const listThreadsQuery = z.object({ ...pageQueryShape }).strict();

/** Newest activity first. A thread that gains a message moves up; a client paging meanwhile may see it twice. */
export async function listThreads(ctx: OpsContext, accountId: string, q: z.output<typeof listThreadsQuery>) {
  const pos = decodeCursor(ctx.cursors, q.cursor);
  const rows = await ctx.prisma.thread.findMany({
    where: {
      accountId,
      emails: { some: {} },
      ...(pos ? { OR: [{ lastMessageAt: { lt: pos.at } }, { lastMessageAt: pos.at, id: { lt: pos.id } }] } : {}),
    },
    orderBy: [{ lastMessageAt: "desc" }, { id: "desc" }],
    take: q.limit + 1,
    include: { _count: { select: { emails: true } } },
  });
  return toPage(
    ctx.cursors,
    rows,
    q.limit,
    (r) => r.lastMessageAt,
    (r) => ({
      id: r.id,
      subject: r.subject,
      messageCount: r._count.emails,
      lastMessageAt: r.lastMessageAt.toISOString(),
      createdAt: r.createdAt.toISOString(),
    }),
  );
}

/** Spec §4: `{ threadId, data }`, oldest first, inbound and outbound; 404 when it has no messages. */
export async function getThread(ctx: OpsContext, accountId: string, id: string) {
  const rows = await ctx.prisma.email.findMany({
    where: { threadId: id, accountId },
    orderBy: [{ receivedAt: "asc" }, { id: "asc" }],
    include: withCount,
  });
  if (rows.length === 0) throw new AppError("not_found", "Thread not found");
  return { threadId: id, data: rows.map((r) => emailSummaryView(r, r._count.attachments)) };
}
