import { createHash } from "node:crypto";
import { newId, type Prisma, type PrismaClient, poolOf, readBytea } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type EventPublisher, enqueue, type Queue } from "@mailroom/queues";
import { isDependencyOutage } from "./outage.ts";
import { createParser, generatedMessageId, type ParsedEmail, type Parser } from "./parse.ts";
import { sanitizeForPostgres } from "./sanitize.ts";
import { type AuthVerdicts, authVerdicts, type DnsResolve, type Verdict } from "./verdicts.ts";

/** What shield rules decided for one recipient. `endpointIds: null` = the address's own destination. */
export type ShieldOutcome =
  | { action: "deliver"; ruleId: string | null; ruleAction: "allow" | "route" | null; endpointIds: string[] | null }
  | { action: "block"; ruleId: string; ruleName: string };

export type ShieldInput = {
  accountId: string;
  domainId: string;
  addressId: string | null;
  recipient: string;
  email: ParsedEmail;
  verdicts: AuthVerdicts & { spam: string };
};

export type SpamVerdict = { verdict: Verdict; score: number | null };

export type SpamInput = {
  ip: string | null;
  helo: string | null;
  mailFrom: string;
  recipient: string;
  queueId: string;
};

export type ProcessDeps = {
  prisma: PrismaClient;
  deliveryQueue: Queue;
  logger: Logger;
  resolver: DnsResolve;
  mtaHostname: string;
  /** Shield-rule evaluation; the default delivers everything to the address's destination. */
  shield?: (input: ShieldInput) => Promise<ShieldOutcome>;
  /** Spam verdict (spam.ts: rspamd); without a scanner the verdict is GRAY. */
  spam?: (raw: Uint8Array, input: SpamInput) => Promise<SpamVerdict>;
  /** MIME parser off the event loop (parse.ts); one is created per deps object when omitted. */
  parser?: Parser;
  /** Same account + recipient + Message-ID + content hash within this window is a duplicate. */
  dedupeWindowMs?: number;
  /** Live events (`email.received`) for API waiters and streams; absent: none are published. */
  events?: EventPublisher;
};

/**
 * `failed`: the message used up its processing budget (attempts.ts). It is stored from its raw
 * bytes without parsing, verdicts or spam scan, all PROCESSING_FAILED: with whatever few headers
 * can be read safely (`headers`), or with none at all (`empty`) when even that could not be stored.
 */
export type ProcessOptions = { failed?: "headers" | "empty" };

export type ProcessResult =
  | { outcome: "stored"; emailId: string; deliveryIds: string[]; parsed: boolean }
  | { outcome: "blocked"; ruleId: string }
  | { outcome: "duplicate"; emailId: string }
  | { outcome: "skipped"; reason: string };

// A 25 MB message writes its attachments inside the transaction; give it time.
const TX_OPTIONS = { timeout: 60_000, maxWait: 10_000 };
const DAY_MS = 24 * 3600 * 1000;

const deliverAll = async (): Promise<ShieldOutcome> => ({
  action: "deliver",
  ruleId: null,
  ruleAction: null,
  endpointIds: null,
});

const parsers = new WeakMap<ProcessDeps, Parser>();
function parserFor(deps: ProcessDeps): Parser {
  if (deps.parser) return deps.parser;
  let p = parsers.get(deps);
  if (!p) {
    p = createParser();
    parsers.set(deps, p);
  }
  return p;
}

/** The SHA-256 of the body (everything after the header block): trace headers added by relays differ. */
export function bodyHash(raw: Uint8Array): string {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  const cut = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : buf.length;
  return createHash("sha256").update(buf.subarray(cut)).digest("hex");
}

/**
 * Best effort for a message the parser refused (or one that could not be processed at all): a few
 * raw header values from the first 64 KB, or (`empty`) none, only what the envelope says.
 */
function unparsedEmail(raw: Uint8Array, envelopeFrom: string, fallbackIdDomain: string, empty = false): ParsedEmail {
  const head = empty
    ? ""
    : Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.byteLength, 65_536)).toString("latin1");
  const end = head.search(/\r?\n\r?\n/);
  const unfolded = (end >= 0 ? head.slice(0, end) : head).replace(/\r?\n[ \t]+/g, " ");
  const header = (name: string) =>
    new RegExp(`^${name}:[ \\t]*(.*)$`, "im").exec(unfolded)?.[1]?.trim().slice(0, 998) ?? null;
  const messageId = header("Message-ID");
  return {
    messageId: messageId ?? generatedMessageId(raw, fallbackIdDomain),
    messageIdPresent: Boolean(messageId),
    inReplyTo: null,
    references: [],
    fromAddress: envelopeFrom.toLowerCase(),
    fromName: null,
    toAddresses: [],
    ccAddresses: [],
    replyTo: [],
    subject: header("Subject") ?? "",
    textBody: "",
    strippedText: "",
    htmlBody: "",
    headers: [],
    attachments: [],
  };
}

/** `user+tag@` routed to `user@` (or a catch-all): the tag. An explicit `user+tag` address has none. */
function plusTag(recipient: string, addressLocalPart: string | null): string | null {
  const local = recipient.slice(0, recipient.lastIndexOf("@"));
  if (addressLocalPart === local) return null;
  const plus = local.indexOf("+");
  return plus > 0 && plus < local.length - 1 ? local.slice(plus + 1) : null;
}

/**
 * Processes one accepted recipient (one `inbound` job): parse (off the event loop), verdicts, shield
 * rules, then store the Email, its thread and its Deliveries in one transaction. Idempotent: the
 * recipient row moves out of `pending` in that same transaction, so a retried job or a second worker
 * does nothing twice; and the same message sent twice to the same recipient within 24 h (same
 * Message-ID and body hash) is recorded as a duplicate instead of a second Email.
 */
export async function processRecipient(
  deps: ProcessDeps,
  spoolRecipientId: string,
  opts: ProcessOptions = {},
): Promise<ProcessResult> {
  const { prisma } = deps;
  const rcpt = await prisma.spoolRecipient.findUnique({
    where: { id: spoolRecipientId },
    // Everything but the raw bytes, which are read below around Prisma (packages/db/src/blobs.ts).
    include: {
      spool: {
        select: { id: true, mailFrom: true, remoteIp: true, helo: true, size: true, sha256: true, receivedAt: true },
      },
    },
  });
  if (!rcpt) return { outcome: "skipped", reason: "recipient no longer spooled" };
  if (rcpt.status !== "pending") {
    // Stored earlier, but the delivery jobs may not have reached Redis: queue them again (idempotent).
    const email = await prisma.email.findUnique({ where: { spoolRecipientId }, select: { id: true } });
    if (email) {
      // The process may have died before the attachment bytes were written.
      if (rcpt.status === "storing") await resumeStoring(deps, rcpt.id, email.id, rcpt.spoolId);
      await enqueuePendingDeliveries(deps, email.id);
    }
    // Blocked or dropped earlier, but the process may have died before the raw bytes were purged.
    else await purgeSpoolIfUnused(prisma, rcpt.spoolId);
    return { outcome: "skipped", reason: `already ${rcpt.status}` };
  }

  // The account, domain or address may have been deleted since the message was accepted. Without
  // this check the Email insert fails its foreign keys on every retry, for ever.
  const [account, domain, address] = await Promise.all([
    prisma.account.findUnique({ where: { id: rcpt.accountId }, select: { id: true } }),
    prisma.domain.findUnique({ where: { id: rcpt.domainId }, select: { id: true } }),
    rcpt.addressId
      ? prisma.address.findUnique({ where: { id: rcpt.addressId }, select: { localPart: true } })
      : Promise.resolve(null),
  ]);
  if (!account) {
    const claimed = await prisma.spoolRecipient.updateMany({
      where: { id: rcpt.id, status: "pending" },
      data: { status: "dropped", processedAt: new Date() },
    });
    await purgeSpoolIfUnused(prisma, rcpt.spoolId);
    return { outcome: "skipped", reason: claimed.count ? "account deleted" : "processed concurrently" };
  }
  // Kept (accepted mail is never lost) but, as for an email stored just before the deletion, without
  // the deleted domain/address and without deliveries to what they routed to.
  const orphaned = !domain || (rcpt.addressId !== null && !address);

  // In a SharedArrayBuffer, so the parser thread reads these bytes without a copy of its own.
  const raw = await readBytea(poolOf(prisma), RAW, rcpt.spoolId, { shared: true });
  if (!raw) return { outcome: "skipped", reason: "raw message no longer spooled" };
  const spoolMeta = { ip: rcpt.spool.remoteIp, helo: rcpt.spool.helo, mailFrom: rcpt.spool.mailFrom };
  const parsed = opts.failed
    ? ({ ok: false, reason: "processing budget used up" } as const)
    : await parserFor(deps).parse(raw, deps.mtaHostname);
  let decoded: ParsedEmail;
  let auth: AuthVerdicts;
  let spam: SpamVerdict;
  if (parsed.ok) {
    decoded = parsed.email;
    [auth, spam] = await Promise.all([
      authVerdicts({ raw, ...spoolMeta, mta: deps.mtaHostname }, deps.resolver),
      scanSpam(deps, raw, { ...spoolMeta, recipient: rcpt.recipient, queueId: rcpt.spoolId }),
    ]);
  } else {
    // Kept as raw (GET /emails/{id}/raw) and marked: nothing about it could be verified.
    deps.logger.warn({ spoolRecipientId, reason: parsed.reason }, "message could not be parsed; storing raw");
    decoded = unparsedEmail(raw, rcpt.spool.mailFrom, deps.mtaHostname, opts.failed === "empty");
    auth = { spf: "PROCESSING_FAILED", dkim: "PROCESSING_FAILED", dmarc: "PROCESSING_FAILED" };
    spam = { verdict: "PROCESSING_FAILED", score: null };
  }
  // The one place where decoded text is made storable: everything below (shield rules, block
  // record, thread, Email row, attachment rows) sees the cleaned values.
  const { value: email, sanitized } = sanitizeForPostgres(decoded);
  if (sanitized.length) deps.logger.info({ spoolRecipientId, sanitized }, "replaced characters Postgres cannot store");
  const contentHash = bodyHash(raw);
  const shieldInput: ShieldInput = {
    accountId: rcpt.accountId,
    domainId: rcpt.domainId,
    addressId: rcpt.addressId,
    recipient: rcpt.recipient,
    email,
    verdicts: { ...auth, spam: spam.verdict },
  };
  const decision = await (deps.shield ?? deliverAll)(shieldInput).catch((err: unknown) => {
    // A message past its budget is stored whatever happens: rules that cannot be evaluated for it
    // leave it to the address's own destination, like a message no rule matches.
    if (!opts.failed || isDependencyOutage(err)) throw err;
    deps.logger.warn({ spoolRecipientId, err: (err as Error).message }, "shield rules failed; delivering as unmatched");
    return deliverAll();
  });

  if (decision.action === "block") {
    const blocked = await prisma.$transaction(async (tx) => {
      const claimed = await tx.spoolRecipient.updateMany({
        where: { id: rcpt.id, status: "pending" },
        data: { status: "blocked", processedAt: new Date() },
      });
      if (claimed.count === 0) return false;
      await tx.blockRecord.create({
        data: {
          id: newId("block"),
          accountId: rcpt.accountId,
          ruleId: decision.ruleId,
          ruleName: decision.ruleName,
          sender: email.fromAddress || rcpt.spool.mailFrom,
          recipient: rcpt.recipient,
          subject: email.subject,
          receivedAt: rcpt.spool.receivedAt,
        },
      });
      return true;
    }, TX_OPTIONS);
    if (blocked) await purgeSpoolIfUnused(prisma, rcpt.spoolId);
    return blocked
      ? { outcome: "blocked", ruleId: decision.ruleId }
      : { outcome: "skipped", reason: "processed concurrently" };
  }

  const endpointIds = orphaned ? [] : await destinations(prisma, rcpt, decision);
  const windowMs = deps.dedupeWindowMs ?? DAY_MS;
  const stored = await prisma.$transaction(async (tx) => {
    // Serialises the duplicate check for one (account, recipient, Message-ID) across workers.
    const dedupeKey = `${rcpt.accountId}\n${rcpt.recipient}\n${email.messageId}`;
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${dedupeKey}, 0))`;
    const same = await tx.email.findFirst({
      where: {
        accountId: rcpt.accountId,
        recipient: rcpt.recipient,
        messageId: email.messageId,
        contentHash,
        direction: "inbound",
        receivedAt: { gte: new Date(rcpt.spool.receivedAt.getTime() - windowMs) },
      },
      select: { id: true },
    });
    const claimed = await tx.spoolRecipient.updateMany({
      where: { id: rcpt.id, status: "pending" },
      // `storing` until the attachment bytes are written after the commit (finishStoring).
      data: { status: same ? "duplicate" : email.attachments.length ? "storing" : "stored", processedAt: new Date() },
    });
    if (claimed.count === 0) return null;
    if (same) return { duplicate: true as const, emailId: same.id };
    const threadId = await findOrCreateThread(tx, rcpt.accountId, email, rcpt.spool.receivedAt);
    const emailId = newId("email");
    await tx.email.create({
      data: {
        id: emailId,
        accountId: rcpt.accountId,
        domainId: domain ? rcpt.domainId : null,
        addressId: address ? rcpt.addressId : null,
        threadId,
        direction: "inbound",
        messageId: email.messageId,
        inReplyTo: email.inReplyTo,
        references: email.references,
        fromAddress: email.fromAddress,
        fromName: email.fromName,
        toAddresses: email.toAddresses,
        ccAddresses: email.ccAddresses,
        replyTo: email.replyTo,
        sanitized,
        subject: email.subject,
        textBody: email.textBody,
        strippedText: email.strippedText,
        htmlBody: email.htmlBody,
        headers: email.headers,
        recipient: rcpt.recipient,
        plusTag: plusTag(rcpt.recipient, address?.localPart ?? null),
        spamVerdict: spam.verdict,
        spamScore: spam.score,
        spfVerdict: auth.spf,
        dkimVerdict: auth.dkim,
        dmarcVerdict: auth.dmarc,
        shieldRuleId: decision.ruleId,
        shieldAction: decision.ruleAction,
        contentHash,
        spoolId: rcpt.spoolId,
        spoolRecipientId: rcpt.id,
        receivedAt: rcpt.spool.receivedAt,
      },
    });
    // Rows only: the bytes are written after the commit, around Prisma (see finishStoring).
    for (const [index, a] of email.attachments.entries()) {
      const id = newId("attachment");
      await tx.attachment.create({
        data: {
          id,
          emailId,
          index,
          filename: a.filename,
          contentType: a.contentType,
          size: a.size,
          contentId: a.contentId,
          disposition: a.disposition,
          checksum: a.checksum,
          content: null,
          stored: false,
        },
        select: { id: true },
      });
    }
    const deliveryIds: string[] = [];
    for (const endpoint of endpointIds) {
      const id = newId("delivery");
      await tx.delivery.create({
        data: {
          id,
          accountId: rcpt.accountId,
          emailId,
          endpointId: endpoint.id,
          maxAttempts: endpoint.maxAttempts,
          nextAttemptAt: new Date(),
        },
      });
      deliveryIds.push(id);
    }
    return { emailId, deliveryIds, duplicate: undefined };
  }, TX_OPTIONS);
  if (!stored) return { outcome: "skipped", reason: "processed concurrently" };
  if (stored.duplicate) {
    deps.logger.info({ spoolRecipientId, duplicateOf: stored.emailId }, "duplicate message not stored again");
    await purgeSpoolIfUnused(prisma, rcpt.spoolId);
    return { outcome: "duplicate", emailId: stored.emailId };
  }
  if (email.attachments.length) await finishStoring(deps, rcpt.id, stored.emailId, email.attachments);
  // Committed, bytes included: now waiters (wait_for_email, GET /events) may read it.
  await deps.events?.({ type: "email.received", accountId: rcpt.accountId, emailId: stored.emailId });
  await enqueuePendingDeliveries(deps, stored.emailId);
  deps.logger.info({ emailId: stored.emailId, deliveries: stored.deliveryIds.length }, "email stored");
  return { outcome: "stored", emailId: stored.emailId, deliveryIds: stored.deliveryIds ?? [], parsed: parsed.ok };
}

async function scanSpam(deps: ProcessDeps, raw: Uint8Array, input: SpamInput): Promise<SpamVerdict> {
  if (!deps.spam) return { verdict: "GRAY", score: null };
  try {
    return await deps.spam(raw, input);
  } catch (err) {
    deps.logger.warn({ err: (err as Error).message }, "spam scan failed");
    return { verdict: "PROCESSING_FAILED", score: null };
  }
}

async function destinations(
  prisma: PrismaClient,
  rcpt: { accountId: string; domainId: string; addressId: string | null },
  decision: Extract<ShieldOutcome, { action: "deliver" }>,
): Promise<{ id: string; maxAttempts: number }[]> {
  let ids: string[];
  if (decision.endpointIds) ids = decision.endpointIds;
  else if (rcpt.addressId) {
    const a = await prisma.address.findUnique({ where: { id: rcpt.addressId }, select: { endpointId: true } });
    ids = a?.endpointId ? [a.endpointId] : [];
  } else {
    const d = await prisma.domain.findUnique({ where: { id: rcpt.domainId }, select: { catchAllEndpointId: true } });
    ids = d?.catchAllEndpointId ? [d.catchAllEndpointId] : [];
  }
  if (ids.length === 0) return [];
  return prisma.endpoint.findMany({
    where: { id: { in: ids }, accountId: rcpt.accountId },
    select: { id: true, maxAttempts: true },
  });
}

/** Joins the thread of any message named in In-Reply-To or References (same account), else starts one. */
async function findOrCreateThread(
  tx: Prisma.TransactionClient,
  accountId: string,
  email: ParsedEmail,
  at: Date,
): Promise<string> {
  const refs = [...new Set([email.inReplyTo, ...email.references].filter((r): r is string => Boolean(r)))];
  if (refs.length) {
    const parent = await tx.email.findFirst({
      where: { accountId, messageId: { in: refs } },
      orderBy: { receivedAt: "desc" },
      select: { threadId: true },
    });
    if (parent) {
      await tx.thread.update({ where: { id: parent.threadId }, data: { lastMessageAt: at } });
      return parent.threadId;
    }
  }
  const id = newId("thread");
  await tx.thread.create({ data: { id, accountId, subject: email.subject, lastMessageAt: at, createdAt: at } });
  return id;
}

async function enqueuePendingDeliveries(deps: ProcessDeps, emailId: string): Promise<void> {
  const pending = await deps.prisma.delivery.findMany({
    where: { emailId, status: "pending", attemptCount: 0 },
    select: { id: true },
  });
  for (const d of pending) {
    await enqueue(deps.deliveryQueue, "delivery", { deliveryId: d.id }, { jobId: `${d.id}.1` });
  }
}

/** A blocked message keeps no body: drop the raw bytes once no other recipient still needs them. */
async function purgeSpoolIfUnused(prisma: PrismaClient, spoolId: string): Promise<void> {
  const [pending, emails] = await Promise.all([
    prisma.spoolRecipient.count({ where: { spoolId, status: "pending" } }),
    prisma.email.count({ where: { spoolId } }),
  ]);
  if (pending === 0 && emails === 0) await prisma.spooledMessage.deleteMany({ where: { id: spoolId } });
}

const RAW = { table: "spooled_messages", column: "raw" } as const;

/**
 * Attachment bytes go in after the email's transaction, one binary parameter each, because Prisma's
 * bytea path copies a 25 MB value many times over (packages/db/src/blobs.ts). Until then the
 * recipient is `storing` and the attachment rows say `stored: false`; deliveries are queued only
 * after this, and a re-run of the job (or the sweeper, which re-queues `storing` recipients) writes
 * whatever a crash left unwritten, so a stored email always ends up with its bytes.
 */
async function finishStoring(
  deps: ProcessDeps,
  spoolRecipientId: string,
  emailId: string,
  attachments: readonly { content: Uint8Array }[],
): Promise<void> {
  const pool = poolOf(deps.prisma);
  for (const [index, a] of attachments.entries()) {
    const buf = Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength);
    await pool.query(`UPDATE attachments SET content = $1, stored = true WHERE "emailId" = $2 AND index = $3`, [
      buf,
      emailId,
      index,
    ]);
  }
  await deps.prisma.spoolRecipient.updateMany({
    where: { id: spoolRecipientId, status: "storing" },
    data: { status: "stored" },
  });
}

async function resumeStoring(deps: ProcessDeps, spoolRecipientId: string, emailId: string, spoolId: string) {
  const raw = await readBytea(poolOf(deps.prisma), RAW, spoolId, { shared: true });
  const parsed = raw ? await parserFor(deps).parse(raw, deps.mtaHostname) : null;
  await finishStoring(deps, spoolRecipientId, emailId, parsed?.ok ? parsed.email.attachments : []);
}
