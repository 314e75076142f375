import { createDkimKey, dkimSelectorFor, newMessageId, retryDelayMs } from "@mailroom/core";
import { newId, type PrismaClient, poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type DeliveryMetrics, secondsSince } from "@mailroom/observability";
import { type EventPublisher, retryFor } from "@mailroom/queues";
import { type ByteStore, postgresByteStore } from "@mailroom/storage";
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
  /** Live events (`delivery.succeeded`, `delivery.dead`) for `GET /events`; absent: none are published. */
  events?: EventPublisher;
  /** Attempt outcomes and latency (mailroom_delivery_attempt*); absent: not measured. */
  metrics?: DeliveryMetrics;
  /** Where the original's raw MIME is (BYTE_STORE); absent: its Postgres row. */
  bytes?: ByteStore;
};

export type ForwardOutcome =
  | { outcome: "delivered" | "dead"; attempt: number }
  | { outcome: "retrying"; attempt: number; nextAttemptAt: Date }
  | { outcome: "skipped"; reason: string };

/** Header on every forward; a message carrying it is never forwarded again (forwarding loops). */
export const FORWARDED_HEADER = "X-Service-Forwarded-By";
const DEFAULT_LEASE_MS = 10 * 60_000;

const forwardSubject = (s: string) => (/^(fwd?|fw):/i.test(s.trim()) ? s.trim() : `Fwd: ${s.trim()}`);

/** One pass over due email-destination deliveries (the dispatcher leaves them to us). */
export async function forwardDue(deps: ForwardDeps, limit = 50): Promise<number> {
  const now = (deps.now ?? (() => new Date()))();
  const due = await deps.prisma.delivery.findMany({
    where: {
      status: { in: ["pending", "retrying"] },
      endpoint: { type: "email", active: true },
      OR: [{ nextAttemptAt: null }, { nextAttemptAt: { lte: now } }],
    },
    select: { id: true },
    orderBy: { createdAt: "asc" },
    take: limit,
  });
  for (const d of due) {
    const started = process.hrtime.bigint();
    const r = await attemptForward(deps, d.id);
    if (r.outcome !== "skipped") deps.metrics?.attempt("email", r.outcome, secondsSince(started));
  }
  return due.length;
}

/**
 * Forwards the original message, unchanged, as a message/rfc822 attachment of a new message from the
 * address that received it (DKIM-signed by that domain, so DMARC aligns at the destination). The
 * Delivery row keeps the schedule exactly as for webhooks: attempts, backoff, `maxAttempts`, `dead`.
 */
export async function attemptForward(deps: ForwardDeps, deliveryId: string): Promise<ForwardOutcome> {
  const { prisma } = deps;
  const now = deps.now ?? (() => new Date());
  const d = await prisma.delivery.findUnique({
    where: { id: deliveryId },
    include: {
      endpoint: true,
      email: {
        include: {
          domain: { select: { id: true, domain: true, dkimTokens: true, dkimSelector: true, dkimPrivateKey: true } },
        },
      },
    },
  });
  if (d?.endpoint.type !== "email") return { outcome: "skipped", reason: "not an email destination" };
  if (d.status !== "pending" && d.status !== "retrying") return { outcome: "skipped", reason: `already ${d.status}` };
  const attempt = d.attemptCount + 1;
  const claimed = await prisma.delivery.updateMany({
    where: { id: d.id, attemptCount: d.attemptCount, status: d.status, nextAttemptAt: d.nextAttemptAt },
    data: { nextAttemptAt: new Date(now().getTime() + (deps.leaseMs ?? DEFAULT_LEASE_MS)) },
  });
  if (claimed.count === 0) return { outcome: "skipped", reason: "claimed by another worker" };

  const startedAt = now();
  const e = d.email;
  const to = d.endpoint.url.replace(/^mailto:/i, "");
  const from = e.recipient ?? e.toAddresses[0] ?? "";
  const looped = (e.headers as { key?: string }[]).some((h) => h.key?.toLowerCase() === FORWARDED_HEADER.toLowerCase());
  // The original bytes, through the byte store (the spool row in slices, or the object store).
  const raw = e.spoolId ? await (deps.bytes ?? postgresByteStore(poolOf(prisma))).readRaw(e.spoolId) : null;
  let result: RelayResult;
  if (looped)
    result = { ok: false, reply: "not forwarded: the message is itself a forward (loop)", permanent: true, code: null };
  else if (!raw || !e.domain || !from) {
    result = { ok: false, reply: "the original message or its domain is no longer kept", permanent: true, code: null };
  } else {
    const key = await signingKey(prisma, e.domain);
    const mail: Mail.Options = {
      from: { name: `${e.fromName || e.fromAddress} via ${from}`, address: from },
      replyTo: e.fromAddress || undefined,
      to,
      subject: forwardSubject(e.subject),
      text: `Forwarded message from ${e.fromAddress} to ${from}, received ${e.receivedAt.toISOString()}.\nThe original is attached.\n\n${e.textBody}`,
      messageId: newMessageId(e.domain.domain),
      headers: { [FORWARDED_HEADER]: d.id },
      attachments: [{ filename: "original.eml", contentType: "message/rfc822", content: raw }],
      envelope: { from, to: [to] },
      dkim: { domainName: e.domain.domain, keySelector: key.selector, privateKey: key.privateKey },
    };
    result = await deps.relay.send(mail);
  }
  const finishedAt = now();

  const final = result.ok || result.permanent || attempt >= d.maxAttempts;
  const status = result.ok ? "delivered" : final ? "dead" : "retrying";
  const nextAttemptAt = final
    ? null
    : new Date(finishedAt.getTime() + retryDelayMs(attempt - d.attemptBase, deps.backoffUnitMs));
  // Handed over (or refused): record it, retrying through a Postgres blip rather than forwarding again.
  const recorded = await retryFor(() =>
    prisma.$transaction(async (tx) => {
      const r = await tx.delivery.updateMany({
        where: { id: d.id, attemptCount: d.attemptCount, status: { in: ["pending", "retrying"] } },
        data: {
          attemptCount: attempt,
          status,
          nextAttemptAt,
          lastStatusCode: result.code,
          lastError: result.ok ? null : result.reply,
          deliveredAt: result.ok ? finishedAt : null,
        },
      });
      if (r.count === 0) return false;
      await tx.deliveryAttempt.create({
        data: {
          id: newId("deliveryAttempt"),
          deliveryId: d.id,
          number: attempt,
          statusCode: result.code,
          durationMs: finishedAt.getTime() - startedAt.getTime(),
          error: result.ok ? null : result.reply,
          responseBody: result.reply.slice(0, 4096),
          startedAt,
          finishedAt,
        },
      });
      return true;
    }),
  );
  if (!recorded) return { outcome: "skipped", reason: "attempt recorded by another worker" };
  // A dead delivery needs someone to look at it (and maybe replay it): warn.
  deps.logger[status === "dead" ? "warn" : "info"](
    { deliveryId, attempt, status, reply: result.reply },
    "forward attempt",
  );
  // The final outcome is committed: tell the account's live streams, as the webhook dispatcher does.
  if (!nextAttemptAt) {
    const type = result.ok ? "delivery.succeeded" : "delivery.dead";
    await deps.events?.({ type, accountId: d.accountId, deliveryId: d.id, emailId: d.emailId });
  }
  return nextAttemptAt
    ? { outcome: "retrying", attempt, nextAttemptAt }
    : { outcome: status as "delivered" | "dead", attempt };
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
