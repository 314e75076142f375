import { createHash } from "node:crypto";
import type { RuleForEval } from "@mailroom/core";
import { type PrismaClient, poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type EventPublisher, enqueue, type Queue } from "@mailroom/queues";
import { type ByteStore, postgresByteStore } from "@mailroom/storage";
import type { ByteBudget } from "./budget.ts";
import { defaultEndpointIds, type LoadedRecipient, loadRecipient } from "./load.ts";
import { isDependencyOutage } from "./outage.ts";
import { createParser, generatedMessageId, type ParsedEmail, type Parser } from "./parse.ts";
import { sanitizeForPostgres } from "./sanitize.ts";
import { purgeSpoolIfUnused, recordBlock, storeEmail } from "./store.ts";
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
  /** The account's enabled rules in priority order, read by the load step; absent: the shield reads them. */
  rules?: readonly RuleForEval[];
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
  /** Message bytes processed at once (budget.ts); absent: only the concurrency bounds them. */
  memoryBudget?: ByteBudget;
  /** Where raw MIME and attachment bytes live (BYTE_STORE); absent: in their Postgres rows. */
  bytes?: ByteStore;
};

const byteStores = new WeakMap<ProcessDeps, ByteStore>();
function bytesOf(deps: ProcessDeps): ByteStore {
  if (deps.bytes) return deps.bytes;
  let b = byteStores.get(deps);
  if (!b) {
    b = postgresByteStore(poolOf(deps.prisma));
    byteStores.set(deps, b);
  }
  return b;
}

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
 * Processes one accepted recipient (one `inbound` job) in named steps: load (one statement: the
 * recipient, its spool, what it routes to and the account's shield rules), raw bytes, parse (off
 * the event loop), verdicts, shield rules, then store the Email, its thread and its Deliveries in
 * one transaction (store.ts). Idempotent: the recipient row moves out of `pending` in that same
 * transaction, so a retried job or a second worker does nothing twice; and the same message sent
 * twice to the same recipient within 24 h (same Message-ID and body hash) is recorded as a
 * duplicate instead of a second Email. `loaded`: the load step already done by the caller
 * (attempts.ts counts the try in it).
 */
export async function processRecipient(
  deps: ProcessDeps,
  spoolRecipientId: string,
  opts: ProcessOptions = {},
  loaded?: LoadedRecipient | null,
): Promise<ProcessResult> {
  const pool = poolOf(deps.prisma);
  const rcpt = loaded === undefined ? await loadRecipient(pool, spoolRecipientId) : loaded;
  if (!rcpt) return { outcome: "skipped", reason: "recipient no longer spooled" };
  const result = await processLoaded(deps, rcpt, opts);
  await archiveRaw(deps, rcpt);
  return result;
}

/**
 * With an object store, the raw MIME leaves the spool row once no recipient of it needs it any
 * more (packages/storage). Every outcome may be the last recipient's, so each one asks. A failure
 * fails the job: the bytes stay readable in the row meanwhile, and the retried job (which finds
 * the recipient processed and takes the skip path) archives them. The upload reads the message
 * once more, so it takes its turn in the memory budget as processing does.
 */
async function archiveRaw(deps: ProcessDeps, rcpt: LoadedRecipient): Promise<void> {
  const bytes = bytesOf(deps);
  if (bytes.backend === "postgres") return;
  const release = await deps.memoryBudget?.acquire(rcpt.size);
  try {
    await bytes.archiveRaw(rcpt.spoolId);
  } finally {
    release?.();
  }
}

async function processLoaded(deps: ProcessDeps, rcpt: LoadedRecipient, opts: ProcessOptions): Promise<ProcessResult> {
  const { prisma } = deps;
  const pool = poolOf(prisma);
  const spoolRecipientId = rcpt.id;
  if (rcpt.status !== "pending") {
    // Stored earlier, but the delivery jobs may not have reached Redis: queue them again (idempotent).
    const email = await prisma.email.findUnique({ where: { spoolRecipientId }, select: { id: true } });
    if (email) {
      // The process may have died before the attachment bytes were written.
      if (rcpt.status === "storing") await resumeStoring(deps, rcpt.id, email.id, rcpt.spoolId);
      await enqueuePendingDeliveries(deps, email.id);
    }
    // Blocked or dropped earlier, but the process may have died before the raw bytes were purged.
    else await purgeSpoolIfUnused(pool, rcpt.spoolId);
    return { outcome: "skipped", reason: `already ${rcpt.status}` };
  }

  // The account, domain or address may have been deleted since the message was accepted. Without
  // this check the Email insert fails its foreign keys on every retry, for ever.
  if (!rcpt.accountExists) {
    const claimed = await prisma.spoolRecipient.updateMany({
      where: { id: rcpt.id, status: "pending" },
      data: { status: "dropped", processedAt: new Date() },
    });
    await purgeSpoolIfUnused(pool, rcpt.spoolId);
    return { outcome: "skipped", reason: claimed.count ? "account deleted" : "processed concurrently" };
  }
  // Big messages take turns (budget.ts); the bytes are held until the email is stored.
  const release = await deps.memoryBudget?.acquire(rcpt.size);
  try {
    return await processPending(deps, rcpt, opts);
  } finally {
    release?.();
  }
}

/** Everything after the load step, for a recipient still pending whose account exists. */
async function processPending(deps: ProcessDeps, rcpt: LoadedRecipient, opts: ProcessOptions): Promise<ProcessResult> {
  const pool = poolOf(deps.prisma);
  const spoolRecipientId = rcpt.id;
  // Kept (accepted mail is never lost) but, as for an email stored just before the deletion, without
  // the deleted domain/address and without deliveries to what they routed to.
  const orphaned = !rcpt.domainExists || (rcpt.addressId !== null && !rcpt.address);

  // In a SharedArrayBuffer, so the parser thread reads these bytes without a copy of its own.
  const raw = await bytesOf(deps).readRaw(rcpt.spoolId, { shared: true });
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
    rules: rcpt.rules,
  };
  const decision = await (deps.shield ?? deliverAll)(shieldInput).catch((err: unknown) => {
    // A message past its budget is stored whatever happens: rules that cannot be evaluated for it
    // leave it to the address's own destination, like a message no rule matches.
    if (!opts.failed || isDependencyOutage(err)) throw err;
    deps.logger.warn({ spoolRecipientId, err: (err as Error).message }, "shield rules failed; delivering as unmatched");
    return deliverAll();
  });

  if (decision.action === "block") {
    const blocked = await recordBlock(pool, {
      spoolRecipientId: rcpt.id,
      accountId: rcpt.accountId,
      ruleId: decision.ruleId,
      ruleName: decision.ruleName,
      sender: email.fromAddress || rcpt.spool.mailFrom,
      recipient: rcpt.recipient,
      subject: email.subject,
      receivedAt: rcpt.spool.receivedAt,
    });
    if (blocked) await purgeSpoolIfUnused(pool, rcpt.spoolId);
    return blocked
      ? { outcome: "blocked", ruleId: decision.ruleId }
      : { outcome: "skipped", reason: "processed concurrently" };
  }

  const stored = await storeEmail(pool, {
    row: {
      accountId: rcpt.accountId,
      domainId: rcpt.domainExists ? rcpt.domainId : null,
      addressId: rcpt.address ? rcpt.addressId : null,
      recipient: rcpt.recipient,
      plusTag: plusTag(rcpt.recipient, rcpt.address?.localPart ?? null),
      spamVerdict: spam.verdict,
      spamScore: spam.score,
      spfVerdict: auth.spf,
      dkimVerdict: auth.dkim,
      dmarcVerdict: auth.dmarc,
      shieldRuleId: decision.ruleId,
      shieldAction: decision.ruleAction,
      contentHash,
      sanitized,
      spoolId: rcpt.spoolId,
      spoolRecipientId: rcpt.id,
      receivedAt: rcpt.spool.receivedAt,
    },
    email,
    endpointIds: orphaned ? [] : (decision.endpointIds ?? defaultEndpointIds(rcpt)),
    duplicateSince: new Date(rcpt.spool.receivedAt.getTime() - (deps.dedupeWindowMs ?? DAY_MS)),
  });
  if (stored.kind === "claimed-elsewhere") return { outcome: "skipped", reason: "processed concurrently" };
  if (stored.kind === "duplicate") {
    deps.logger.info({ spoolRecipientId, duplicateOf: stored.emailId }, "duplicate message not stored again");
    await purgeSpoolIfUnused(pool, rcpt.spoolId);
    return { outcome: "duplicate", emailId: stored.emailId };
  }
  if (email.attachments.length) await finishStoring(deps, rcpt.id, stored.emailId, email.attachments);
  // Committed, bytes included: now waiters (wait_for_email, GET /events) may read it.
  await deps.events?.({ type: "email.received", accountId: rcpt.accountId, emailId: stored.emailId });
  await enqueueDeliveries(deps, stored.deliveryIds);
  deps.logger.info({ emailId: stored.emailId, deliveries: stored.deliveryIds.length }, "email stored");
  return { outcome: "stored", emailId: stored.emailId, deliveryIds: stored.deliveryIds, parsed: parsed.ok };
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

/** The first attempt's job of each delivery; the job id makes a repeat a no-op. */
async function enqueueDeliveries(deps: ProcessDeps, deliveryIds: readonly string[]): Promise<void> {
  for (const id of deliveryIds) {
    await enqueue(deps.deliveryQueue, "delivery", { deliveryId: id }, { jobId: `${id}.1` });
  }
}

/** Re-run of a stored email's job: queue again whatever has not been attempted yet. */
async function enqueuePendingDeliveries(deps: ProcessDeps, emailId: string): Promise<void> {
  const pending = await deps.prisma.delivery.findMany({
    where: { emailId, status: "pending", attemptCount: 0 },
    select: { id: true },
  });
  await enqueueDeliveries(
    deps,
    pending.map((d) => d.id),
  );
}

/**
 * Attachment bytes go in after the email's transaction, through the byte store (BYTE_STORE): into
 * the row, one binary parameter each, because Prisma's bytea path copies a 25 MB value many times
 * over (packages/db/src/blobs.ts), or into the object store, the row marked stored only once the
 * object is durable. Until then the recipient is `storing` and the attachment rows say `stored:
 * false`; deliveries are queued only after this, and a re-run of the job (or the sweeper, which
 * re-queues `storing` recipients) writes whatever a crash left unwritten, so a stored email always
 * ends up with its bytes.
 */
async function finishStoring(
  deps: ProcessDeps,
  spoolRecipientId: string,
  emailId: string,
  attachments: readonly { content: Uint8Array }[],
): Promise<void> {
  const bytes = bytesOf(deps);
  for (const [index, a] of attachments.entries()) await bytes.writeAttachment(emailId, index, a.content);
  await deps.prisma.spoolRecipient.updateMany({
    where: { id: spoolRecipientId, status: "storing" },
    data: { status: "stored" },
  });
}

async function resumeStoring(deps: ProcessDeps, spoolRecipientId: string, emailId: string, spoolId: string) {
  const raw = await bytesOf(deps).readRaw(spoolId, { shared: true });
  const parsed = raw ? await parserFor(deps).parse(raw, deps.mtaHostname) : null;
  await finishStoring(deps, spoolRecipientId, emailId, parsed?.ok ? parsed.email.attachments : []);
}
