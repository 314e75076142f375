/**
 * The steps after the email's transaction: `finish storing` (attachment bytes), `enqueue
 * deliveries`, and `resume`, which redoes them for a recipient a crash left half done.
 */
import { poolOf } from "@mailroom/db";
import { enqueueDeliveryAttempt } from "@mailroom/deliveries";
import { bytesOf, type ProcessDeps, type ProcessResult } from "./deps.ts";
import type { LoadedRecipient } from "./load.ts";
import { purgeSpoolIfUnused } from "./store.ts";

/**
 * A recipient no longer pending was processed before, but the process may have died part way: a
 * stored email's delivery jobs may not have reached Redis, a `storing` one may lack attachment
 * bytes, a blocked or dropped one may still hold its raw bytes. Each is redone (idempotent).
 */
export async function resume(deps: ProcessDeps, rcpt: LoadedRecipient): Promise<ProcessResult> {
  const email = await deps.prisma.email.findUnique({ where: { spoolRecipientId: rcpt.id }, select: { id: true } });
  if (email) {
    if (rcpt.status === "storing") await resumeStoring(deps, rcpt, email.id);
    await enqueuePendingDeliveries(deps, email.id);
  } else await purgeSpoolIfUnused(poolOf(deps.prisma), rcpt.spoolId);
  return { outcome: "skipped", reason: `already ${rcpt.status}` };
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
export async function finishStoring(
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

/** The attachments are parsed again from the raw bytes: the first parse died with the process. */
async function resumeStoring(deps: ProcessDeps, rcpt: LoadedRecipient, emailId: string): Promise<void> {
  const raw = await bytesOf(deps).readRaw(rcpt.spoolId, { shared: true });
  // Only the attachments are wanted here: the email row (and its Message-ID) is already stored.
  const parsed = raw ? await deps.parser.parse(raw, "") : null;
  await finishStoring(deps, rcpt.id, emailId, parsed?.ok ? parsed.email.attachments : []);
}

/** The first attempt's job of each delivery, on its destination type's queue; the job id makes a repeat a no-op. */
export async function enqueueDeliveries(
  deps: ProcessDeps,
  deliveries: readonly { id: string; endpointType: string; endpointId?: string }[],
): Promise<void> {
  const queues = { delivery: deps.deliveryQueue, ...(deps.forwardQueue ? { forward: deps.forwardQueue } : {}) };
  for (const d of deliveries) await enqueueDeliveryAttempt(queues, d, 1);
}

/** Re-run of a stored email's job: queue again whatever has not been attempted yet. */
async function enqueuePendingDeliveries(deps: ProcessDeps, emailId: string): Promise<void> {
  const pending = await deps.prisma.delivery.findMany({
    where: { emailId, status: "pending", attemptCount: 0 },
    select: { id: true, endpoint: { select: { type: true } } },
  });
  await enqueueDeliveries(
    deps,
    pending.map((d) => ({ id: d.id, endpointType: d.endpoint.type })),
  );
}
