import { retryDelayMs } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { enqueue, retryFor, type TypedQueue } from "@mailroom/queues";
import { buildMail } from "./message.ts";
import type { Relay, RelayResult } from "./relay.ts";

export type SenderDeps = {
  prisma: PrismaClient;
  /** The `outbound` queue, for scheduling retries. */
  queue: TypedQueue<"outbound">;
  logger: Logger;
  relay: Relay;
  backoffUnitMs: number;
  maxAttempts: number;
  /** An attempt still `sending` after this long is taken to have died with its worker. */
  leaseMs?: number;
  now?: () => Date;
};

export type SendOutcome =
  | { outcome: "sent"; attempt: number }
  | { outcome: "retrying"; attempt: number; nextAttemptAt: Date }
  | { outcome: "failed"; attempt: number }
  | { outcome: "skipped"; reason: string };

const DEFAULT_LEASE_MS = 10 * 60_000;

type OutboundEmail = NonNullable<Awaited<ReturnType<typeof loadOutbound>>>;

const loadOutbound = (prisma: PrismaClient, emailId: string) =>
  prisma.email.findUnique({
    where: { id: emailId },
    include: {
      attachments: { select: { index: true, filename: true, contentType: true, content: true } },
      domain: { select: { domain: true, dkimSelector: true, dkimPrivateKey: true } },
    },
  });

/**
 * One relay hand-off attempt of an outbound email. The Email row is the source of truth: the attempt
 * is claimed (`sending`, attempts + 1) before the relay is contacted, so two workers never send the
 * same attempt, and the result is recorded only by the claim's owner.
 */
export async function attemptSend(deps: SenderDeps, emailId: string): Promise<SendOutcome> {
  const claimed = await claimSend(deps, emailId);
  if ("outcome" in claimed) return claimed;
  const { email, attempt } = claimed;
  const d = email.domain;
  const result =
    d?.dkimSelector && d.dkimPrivateKey
      ? await deps.relay.send(
          buildMail(email, { domain: d.domain, dkimSelector: d.dkimSelector, dkimPrivateKey: d.dkimPrivateKey }),
        )
      : { ok: false as const, reply: "the sending domain was deleted", permanent: true, code: null };
  return recordSend(deps, email.id, attempt, result);
}

/** The email loaded and its next attempt claimed (`sending` with a lease), or why not. */
async function claimSend(
  deps: SenderDeps,
  emailId: string,
): Promise<{ email: OutboundEmail; attempt: number } | SendOutcome> {
  const now = deps.now ?? (() => new Date());
  const email = await loadOutbound(deps.prisma, emailId);
  if (email?.direction !== "outbound") return { outcome: "skipped", reason: "not an outbound email" };
  if (email.sendStatus !== "queued" && email.sendStatus !== "retrying") {
    return { outcome: "skipped", reason: `already ${email.sendStatus}` };
  }
  const attempt = email.sendAttempts + 1;
  const claimed = await deps.prisma.email.updateMany({
    where: { id: email.id, sendAttempts: email.sendAttempts, sendStatus: email.sendStatus },
    data: {
      sendStatus: "sending",
      sendAttempts: attempt,
      sendNextAttemptAt: new Date(now().getTime() + (deps.leaseMs ?? DEFAULT_LEASE_MS)),
    },
  });
  if (claimed.count === 0) return { outcome: "skipped", reason: "attempt claimed by another worker" };
  return { email, attempt };
}

/** The relay's answer recorded by the claim's owner, and the next attempt queued after the backoff. */
async function recordSend(
  deps: SenderDeps,
  emailId: string,
  attempt: number,
  result: RelayResult,
): Promise<SendOutcome> {
  const finishedAt = (deps.now ?? (() => new Date()))();
  const final = result.ok || result.permanent || attempt >= deps.maxAttempts;
  const status = result.ok ? "sent" : final ? "failed" : "retrying";
  const nextAttemptAt = final ? null : new Date(finishedAt.getTime() + retryDelayMs(attempt, deps.backoffUnitMs));
  // The relay has the message (or refused it); a Postgres blip now must not leave the row `sending`
  // until its lease runs out and the message is handed over a second time.
  const recorded = await retryFor(() =>
    deps.prisma.email.updateMany({
      where: { id: emailId, sendAttempts: attempt, sendStatus: "sending" },
      data: {
        sendStatus: status,
        sendNextAttemptAt: nextAttemptAt,
        sendLastReply: result.reply,
        sentAt: result.ok ? finishedAt : null,
      },
    }),
  );
  if (recorded.count === 0) return { outcome: "skipped", reason: "attempt outlived its lease" };
  // A failed (dead) email needs someone to look at it: warn.
  deps.logger[status === "failed" ? "warn" : "info"](
    { emailId, attempt, status, reply: result.reply },
    "outbound attempt",
  );

  if (nextAttemptAt) {
    await enqueue(
      deps.queue,
      "outbound",
      { emailId },
      { jobId: `${emailId}.${attempt + 1}`, delay: Math.max(0, nextAttemptAt.getTime() - Date.now()) },
    );
    return { outcome: "retrying", attempt, nextAttemptAt };
  }
  return result.ok ? { outcome: "sent", attempt } : { outcome: "failed", attempt };
}
