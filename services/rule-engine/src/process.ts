/**
 * processRecipient: one accepted recipient (one `inbound` job), in the steps a reader can follow:
 *
 *   load (load.ts) → resume (finish.ts) if processed before
 *   → parse and judge (judge.ts) → decide (shield.ts)
 *   → record block (store.ts) | store email (store.ts) → finish storing → enqueue deliveries (finish.ts)
 *
 * Idempotent: the recipient row moves out of `pending` in the email's (or the block's) own
 * transaction, so a retried job or a second worker does nothing twice; and the same message sent
 * twice to the same recipient within 24 h (same Message-ID and body hash) is recorded as a
 * duplicate instead of a second Email.
 */
import { poolOf } from "@mailroom/db";
import { SpanKind } from "@mailroom/tracing";
import { bytesOf, type ProcessDeps, type ProcessOptions, type ProcessResult, traced } from "./deps.ts";
import { enqueueDeliveries, finishStoring, resume } from "./finish.ts";
import { type Judged, parseAndJudge } from "./judge.ts";
import { defaultEndpointIds, type LoadedRecipient, loadRecipient } from "./load.ts";
import { decide, type ShieldOutcome } from "./shield.ts";
import { purgeSpoolIfUnused, recordBlock, type StoreInput, type StoreResult, storeEmail } from "./store.ts";

export type { ProcessDeps, ProcessOptions, ProcessResult } from "./deps.ts";

/** Same account + recipient + Message-ID + body hash received within this window is a duplicate. */
const DEDUPE_WINDOW_MS = 24 * 3600 * 1000;

/**
 * Messages up to this size come with the load statement (load.ts: one statement less per email);
 * bigger ones are read by the byte store once the memory budget admits them, as before.
 */
export const RAW_WITH_LOAD_BYTES = 256 * 1024;

/** `loaded`: the load step already done by the caller (attempts.ts counts the try in it). */
export async function processRecipient(
  deps: ProcessDeps,
  spoolRecipientId: string,
  opts: ProcessOptions = {},
  loaded?: LoadedRecipient | null,
): Promise<ProcessResult> {
  const rcpt =
    loaded === undefined
      ? await loadRecipient(poolOf(deps.prisma), spoolRecipientId, { rawUpTo: RAW_WITH_LOAD_BYTES })
      : loaded;
  if (!rcpt) return { outcome: "skipped", reason: "recipient no longer spooled" };
  const tracing = deps.tracing;
  if (!tracing?.enabled) return processAndArchive(deps, rcpt, opts);
  // One span per try of this recipient, under the SMTP transaction's (its traceparent is on the
  // spool row, so a job rebuilt by the sweeper joins the same trace); each step is a child.
  const attributes = { "mailroom.spool_recipient_id": rcpt.id, "mailroom.spool_id": rcpt.spoolId };
  const parent = rcpt.spool.traceparent ?? null;
  return tracing.run("rule-engine process", { parent, kind: SpanKind.CONSUMER, attributes }, async (span) => {
    const result = await processAndArchive(deps, rcpt, opts);
    span.setAttribute("mailroom.outcome", result.outcome);
    if (result.outcome === "stored" || result.outcome === "duplicate")
      span.setAttribute("mailroom.email_id", result.emailId);
    return result;
  });
}

async function processAndArchive(deps: ProcessDeps, rcpt: LoadedRecipient, opts: ProcessOptions) {
  const result = await processLoaded(deps, rcpt, opts);
  await archiveRaw(deps, rcpt);
  return result;
}

async function processLoaded(deps: ProcessDeps, rcpt: LoadedRecipient, opts: ProcessOptions): Promise<ProcessResult> {
  if (rcpt.status !== "pending") return resume(deps, rcpt);
  if (!rcpt.accountExists) return dropForDeletedAccount(deps, rcpt);
  // Big messages take turns (budget.ts); the bytes are held until the email is stored.
  const release = await deps.memoryBudget?.acquire(rcpt.size);
  try {
    return await processPending(deps, rcpt, opts);
  } finally {
    release?.();
  }
}

/**
 * The account may have been deleted since the message was accepted. Without this check the Email
 * insert fails its foreign keys on every retry, for ever.
 */
async function dropForDeletedAccount(deps: ProcessDeps, rcpt: LoadedRecipient): Promise<ProcessResult> {
  const claimed = await deps.prisma.spoolRecipient.updateMany({
    where: { id: rcpt.id, status: "pending" },
    data: { status: "dropped", processedAt: new Date() },
  });
  await purgeSpoolIfUnused(poolOf(deps.prisma), rcpt.spoolId);
  return { outcome: "skipped", reason: claimed.count ? "account deleted" : "processed concurrently" };
}

/** Everything after the load step, for a recipient still pending whose account exists. */
async function processPending(deps: ProcessDeps, rcpt: LoadedRecipient, opts: ProcessOptions): Promise<ProcessResult> {
  // In a SharedArrayBuffer, so the parser thread reads these bytes without a copy of its own.
  const raw = rcpt.raw ?? (await bytesOf(deps).readRaw(rcpt.spoolId, { shared: true }));
  if (!raw) return { outcome: "skipped", reason: "raw message no longer spooled" };
  const judged = await parseAndJudge(deps, rcpt, raw, opts);
  const decision = await traced(deps, "rules", () =>
    decide(
      deps.shield,
      {
        accountId: rcpt.accountId,
        domainId: rcpt.domainId,
        addressId: rcpt.addressId,
        recipient: rcpt.recipient,
        email: judged.email,
        verdicts: { ...judged.auth, spam: judged.spam.verdict, virus: judged.virus.verdict },
        rules: rcpt.rules,
      },
      { failed: Boolean(opts.failed), logger: deps.logger, spoolRecipientId: rcpt.id },
    ),
  );
  if (decision.action === "block") return recordBlocked(deps, rcpt, judged, decision);
  // The processing span, which each delivery attempt's span hangs under.
  const input = storeInput(rcpt, judged, decision, deps.tracing?.traceparent() ?? null);
  const stored = await traced(deps, "store", () =>
    deps.storeEmail ? deps.storeEmail(input) : storeEmail(poolOf(deps.prisma), input),
  );
  return afterStore(deps, rcpt, judged, stored);
}

async function recordBlocked(
  deps: ProcessDeps,
  rcpt: LoadedRecipient,
  { email }: Judged,
  decision: Extract<ShieldOutcome, { action: "block" }>,
): Promise<ProcessResult> {
  const pool = poolOf(deps.prisma);
  const blocked = await traced(deps, "store", () =>
    recordBlock(pool, {
      spoolRecipientId: rcpt.id,
      accountId: rcpt.accountId,
      ruleId: decision.ruleId,
      ruleName: decision.ruleName,
      sender: email.fromAddress || rcpt.spool.mailFrom,
      recipient: rcpt.recipient,
      subject: email.subject,
      receivedAt: rcpt.spool.receivedAt,
    }),
  );
  if (!blocked) return { outcome: "skipped", reason: "processed concurrently" };
  await purgeSpoolIfUnused(pool, rcpt.spoolId);
  return { outcome: "blocked", ruleId: decision.ruleId };
}

/** The Email row, its thread, attachment rows and Deliveries, for store.ts's one transaction. */
function storeInput(
  rcpt: LoadedRecipient,
  judged: Judged,
  decision: Extract<ShieldOutcome, { action: "deliver" }>,
  traceparent: string | null,
): StoreInput {
  // Kept (accepted mail is never lost) but, as for an email stored just before the deletion, without
  // the deleted domain/address and without deliveries to what they routed to.
  const orphaned = !rcpt.domainExists || (rcpt.addressId !== null && !rcpt.address);
  const { auth, spam, virus } = judged;
  return {
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
      virusVerdict: virus.verdict,
      virusSignature: virus.signature,
      arcVerdict: auth.arc,
      dmarcOverridden: auth.dmarcOverridden,
      verdictReasons: { virus: virus.reason, ...auth.reasons },
      shieldRuleId: decision.ruleId,
      shieldAction: decision.ruleAction,
      contentHash: judged.contentHash,
      sanitized: judged.sanitized,
      spoolId: rcpt.spoolId,
      spoolRecipientId: rcpt.id,
      receivedAt: rcpt.spool.receivedAt,
      traceparent,
    },
    email: judged.email,
    endpointIds: orphaned ? [] : (decision.endpointIds ?? defaultEndpointIds(rcpt)),
    duplicateSince: new Date(rcpt.spool.receivedAt.getTime() - DEDUPE_WINDOW_MS),
  };
}

/** Finish storing, announce, enqueue deliveries; or the duplicate / lost-race answers. */
async function afterStore(
  deps: ProcessDeps,
  rcpt: LoadedRecipient,
  judged: Judged,
  stored: StoreResult,
): Promise<ProcessResult> {
  if (stored.kind === "claimed-elsewhere") return { outcome: "skipped", reason: "processed concurrently" };
  if (stored.kind === "duplicate") {
    deps.logger.info({ spoolRecipientId: rcpt.id, duplicateOf: stored.emailId }, "duplicate message not stored again");
    await purgeSpoolIfUnused(poolOf(deps.prisma), rcpt.spoolId);
    return { outcome: "duplicate", emailId: stored.emailId };
  }
  const { emailId, deliveryIds, deliveries } = stored;
  if (judged.email.attachments.length) {
    await traced(deps, "attachments", () => finishStoring(deps, rcpt.id, emailId, judged.email.attachments));
  }
  // Committed, bytes included: now waiters (wait_for_email, GET /events) may read it.
  await deps.events?.({ type: "email.received", accountId: rcpt.accountId, emailId });
  await traced(deps, "deliveries", () => enqueueDeliveries(deps, deliveries));
  deps.logger.info({ emailId, deliveries: deliveryIds.length }, "email stored");
  return { outcome: "stored", emailId, deliveryIds, parsed: judged.parsed };
}

/** `user+tag@` routed to `user@` (or a catch-all): the tag. An explicit `user+tag` address has none. */
function plusTag(recipient: string, addressLocalPart: string | null): string | null {
  const local = recipient.slice(0, recipient.lastIndexOf("@"));
  if (addressLocalPart === local) return null;
  const plus = local.indexOf("+");
  return plus > 0 && plus < local.length - 1 ? local.slice(plus + 1) : null;
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
