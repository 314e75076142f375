import { createDkimKey, dkimSelectorFor, newMessageId } from "@mailroom/core";
import { type PrismaClient, poolOf } from "@mailroom/db";
import {
  type AttemptStore,
  type ClaimedDelivery,
  claimNext,
  directAttemptStore,
  type SettledOutcome,
  settleAttempt,
  type UnclaimedOutcome,
} from "@mailroom/deliveries";
import type { Logger } from "@mailroom/log";
import type { EventPublisher } from "@mailroom/queues";
import { type ByteStore, postgresByteStore } from "@mailroom/storage";
import { SpanKind, type Tracing } from "@mailroom/tracing";
import type Mail from "nodemailer/lib/mailer";
import type { Relay, RelayResult } from "./relay.ts";

export type ForwardDeps = {
  prisma: PrismaClient;
  logger: Logger;
  relay: Relay;
  backoffUnitMs: number;
  /** A claimed attempt that has not been recorded after this long may be taken over. */
  leaseMs?: number;
  now?: () => Date;
  /** The claim and record statements (@mailroom/deliveries); absent: one statement per attempt. */
  store?: AttemptStore;
  /** Queues the job of attempt `n` of a delivery, due at `at` (the `forward` queue). */
  requeue: (deliveryId: string, n: number, at: Date) => Promise<unknown>;
  /** Live events (`delivery.succeeded`, `delivery.dead`) for `GET /events`; absent: none are published. */
  events?: EventPublisher;
  /** Where the original's raw MIME is (BYTE_STORE); absent: its Postgres row. */
  bytes?: ByteStore;
  /** A span per forward attempt, in the trace of the message (the email row's traceparent); absent: none. */
  tracing?: Tracing;
};

export type ForwardOutcome = SettledOutcome | UnclaimedOutcome;

/** Header on every forward; a message carrying it is never forwarded again (forwarding loops). */
export const FORWARDED_HEADER = "X-Service-Forwarded-By";
const DEFAULT_LEASE_MS = 10 * 60_000;
/** A job may fire this much before nextAttemptAt and still count as on time (as for webhooks). */
const EARLY_TOLERANCE_MS = 500;

const forwardSubject = (s: string) => (/^(fwd?|fw):/i.test(s.trim()) ? s.trim() : `Fwd: ${s.trim()}`);

/**
 * Forwards the original message, unchanged, as a message/rfc822 attachment of a new message from the
 * address that received it (DKIM-signed by that domain, so DMARC aligns at the destination). The
 * attempt is claimed and recorded exactly as a webhook's (@mailroom/deliveries): attempts, backoff,
 * `maxAttempts`, `dead`, and a lease, so a second job for the attempt never hands it over again.
 */
export async function attemptForward(
  deps: ForwardDeps,
  deliveryId: string,
  opts: { expectedAttempt?: number } = {},
): Promise<ForwardOutcome> {
  const now = deps.now ?? (() => new Date());
  const store =
    deps.store ??
    directAttemptStore(deps.prisma, { leaseMarginMs: 0, leaseMs: deps.leaseMs ?? DEFAULT_LEASE_MS, email: true });
  const at = now();
  const c = await claimNext(deps.prisma, store, deliveryId, {
    ...opts,
    at,
    toleranceMs: EARLY_TOLERANCE_MS,
    email: true,
  });
  if ("unclaimed" in c) return c.unclaimed;
  const d = c.claimed;
  const tracing = deps.tracing;
  if (!tracing?.enabled) return forwardClaimed(deps, store, d);
  const attributes = {
    "mailroom.delivery_id": d.id,
    "mailroom.attempt": d.attemptCount + 1,
    "mailroom.email_id": d.emailId,
  };
  const spanOpts = { parent: d.traceparent ?? null, kind: SpanKind.CLIENT, startTime: at, attributes };
  return tracing.run("outbound-sender forward", spanOpts, async (span) => {
    const r = await forwardClaimed(deps, store, d);
    span.setAttribute("mailroom.outcome", r.outcome);
    return r;
  });
}

/** A claimed forward attempt: handed to the relay, then recorded. */
async function forwardClaimed(deps: ForwardDeps, store: AttemptStore, d: ClaimedDelivery): Promise<ForwardOutcome> {
  const now = deps.now ?? (() => new Date());
  const deliveryId = d.id;
  const startedAt = now();
  const result = await forward(deps, d);
  const finishedAt = now();
  const made = {
    ok: result.ok,
    permanent: !result.ok && result.permanent,
    statusCode: result.code,
    error: result.ok ? null : result.reply,
    responseBody: result.reply,
    durationMs: finishedAt.getTime() - startedAt.getTime(),
    startedAt,
    finishedAt,
  };
  const r = await settleAttempt({ ...deps, store }, d, made);
  if (r.outcome !== "skipped") {
    // A dead delivery needs someone to look at it (and maybe replay it): warn.
    deps.logger[r.outcome === "dead" ? "warn" : "info"](
      { deliveryId, attempt: r.attempt, status: r.outcome, reply: result.reply },
      "forward attempt",
    );
  }
  return r;
}

/** The forward of a claimed delivery handed to the relay (or refused before that). */
async function forward(deps: ForwardDeps, d: ClaimedDelivery): Promise<RelayResult> {
  const { prisma } = deps;
  const e = await prisma.email.findUniqueOrThrow({
    where: { id: d.emailId },
    select: {
      spoolId: true,
      fromName: true,
      headers: true,
      domain: { select: { id: true, domain: true, dkimTokens: true, dkimSelector: true, dkimPrivateKey: true } },
    },
  });
  const email = d.email;
  const to = d.endpoint.url.replace(/^mailto:/i, "");
  const from = email.recipient ?? email.toAddresses[0] ?? "";
  const looped = (e.headers as { key?: string }[]).some((h) => h.key?.toLowerCase() === FORWARDED_HEADER.toLowerCase());
  if (looped)
    return { ok: false, reply: "not forwarded: the message is itself a forward (loop)", permanent: true, code: null };
  // The original bytes, through the byte store (the spool row in slices, or the object store).
  const raw = e.spoolId ? await (deps.bytes ?? postgresByteStore(poolOf(prisma))).readRaw(e.spoolId) : null;
  if (!raw || !e.domain || !from) {
    return { ok: false, reply: "the original message or its domain is no longer kept", permanent: true, code: null };
  }
  const key = await signingKey(prisma, e.domain);
  const mail: Mail.Options = {
    from: { name: `${e.fromName || email.fromAddress} via ${from}`, address: from },
    replyTo: email.fromAddress || undefined,
    to,
    subject: forwardSubject(email.subject),
    text: `Forwarded message from ${email.fromAddress} to ${from}, received ${email.receivedAt.toISOString()}.\nThe original is attached.\n\n${email.textBody}`,
    messageId: newMessageId(e.domain.domain),
    headers: { [FORWARDED_HEADER]: d.id },
    attachments: [{ filename: "original.eml", contentType: "message/rfc822", content: raw }],
    envelope: { from, to: [to] },
    dkim: { domainName: e.domain.domain, keySelector: key.selector, privateKey: key.privateKey },
  };
  return deps.relay.send(mail);
}

/** The domain's DKIM key; domains registered before outbound mail get theirs on first use. */
async function signingKey(
  prisma: PrismaClient,
  domain: { id: string; dkimTokens: string[]; dkimSelector: string | null; dkimPrivateKey: string | null },
): Promise<{ selector: string; privateKey: string }> {
  if (domain.dkimSelector && domain.dkimPrivateKey)
    return { selector: domain.dkimSelector, privateKey: domain.dkimPrivateKey };
  const key = await createDkimKey(dkimSelectorFor(domain.dkimTokens) as string);
  await prisma.domain.updateMany({
    where: { id: domain.id, dkimPrivateKey: null },
    data: { dkimSelector: key.selector, dkimPrivateKey: key.privateKey, dkimPublicKey: key.publicKey },
  });
  const row = await prisma.domain.findUniqueOrThrow({ where: { id: domain.id } });
  return { selector: row.dkimSelector as string, privateKey: row.dkimPrivateKey as string };
}
