import { newId, type Prisma, type PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { enqueue, type Queue } from "@mailroom/queues";
import { type ParsedEmail, parseEmail } from "./parse.ts";
import { type AuthVerdicts, authVerdicts, type DnsResolve } from "./verdicts.ts";

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

export type ProcessDeps = {
  prisma: PrismaClient;
  deliveryQueue: Queue;
  logger: Logger;
  resolver: DnsResolve;
  mtaHostname: string;
  /** Shield-rule evaluation; the default delivers everything to the address's destination. */
  shield?: (input: ShieldInput) => Promise<ShieldOutcome>;
  /** Spam verdict; without a scanner the verdict is GRAY. */
  spam?: (raw: Buffer) => Promise<{ verdict: string; score: number | null }>;
};

export type ProcessResult =
  | { outcome: "stored"; emailId: string; deliveryIds: string[] }
  | { outcome: "blocked"; ruleId: string }
  | { outcome: "skipped"; reason: string };

// A 25 MB message writes its raw bytes and attachments inside the transaction; give it time.
const TX_OPTIONS = { timeout: 60_000, maxWait: 10_000 };

const deliverAll = async (): Promise<ShieldOutcome> => ({
  action: "deliver",
  ruleId: null,
  ruleAction: null,
  endpointIds: null,
});

/**
 * Processes one accepted recipient (one `inbound` job): parse, verdicts, shield rules, then store the
 * Email, its thread and its Deliveries in one transaction. Idempotent: the recipient row moves out of
 * `pending` in that same transaction, so a retried job or a second worker does nothing twice.
 */
export async function processRecipient(deps: ProcessDeps, spoolRecipientId: string): Promise<ProcessResult> {
  const { prisma } = deps;
  const rcpt = await prisma.spoolRecipient.findUnique({ where: { id: spoolRecipientId }, include: { spool: true } });
  if (!rcpt) return { outcome: "skipped", reason: "recipient no longer spooled" };
  if (rcpt.status !== "pending") {
    // Stored earlier, but the delivery jobs may not have reached Redis: queue them again (idempotent).
    const email = await prisma.email.findUnique({ where: { spoolRecipientId }, select: { id: true } });
    if (email) await enqueuePendingDeliveries(deps, email.id);
    return { outcome: "skipped", reason: `already ${rcpt.status}` };
  }

  const raw = Buffer.from(rcpt.spool.raw);
  const email = await parseEmail(raw, deps.mtaHostname);
  const [auth, spam] = await Promise.all([
    authVerdicts(
      { raw, ip: rcpt.spool.remoteIp, helo: rcpt.spool.helo, mailFrom: rcpt.spool.mailFrom, mta: deps.mtaHostname },
      deps.resolver,
    ),
    deps.spam ? deps.spam(raw) : Promise.resolve({ verdict: "GRAY", score: null }),
  ]);
  const decision = await (deps.shield ?? deliverAll)({
    accountId: rcpt.accountId,
    domainId: rcpt.domainId,
    addressId: rcpt.addressId,
    recipient: rcpt.recipient,
    email,
    verdicts: { ...auth, spam: spam.verdict },
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

  const endpointIds = await destinations(prisma, rcpt, decision);
  const stored = await prisma.$transaction(async (tx) => {
    const claimed = await tx.spoolRecipient.updateMany({
      where: { id: rcpt.id, status: "pending" },
      data: { status: "stored", processedAt: new Date() },
    });
    if (claimed.count === 0) return null;
    const threadId = await findOrCreateThread(tx, rcpt.accountId, email, rcpt.spool.receivedAt);
    const emailId = newId("email");
    await tx.email.create({
      data: {
        id: emailId,
        accountId: rcpt.accountId,
        domainId: rcpt.domainId,
        addressId: rcpt.addressId,
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
        subject: email.subject,
        textBody: email.textBody,
        htmlBody: email.htmlBody,
        headers: email.headers,
        recipient: rcpt.recipient,
        spamVerdict: spam.verdict,
        spamScore: spam.score,
        spfVerdict: auth.spf,
        dkimVerdict: auth.dkim,
        dmarcVerdict: auth.dmarc,
        shieldRuleId: decision.ruleId,
        shieldAction: decision.ruleAction,
        contentHash: rcpt.spool.sha256,
        spoolId: rcpt.spoolId,
        spoolRecipientId: rcpt.id,
        receivedAt: rcpt.spool.receivedAt,
      },
    });
    if (email.attachments.length) {
      await tx.attachment.createMany({
        data: email.attachments.map((a, index) => ({
          id: newId("attachment"),
          emailId,
          index,
          filename: a.filename,
          contentType: a.contentType,
          size: a.size,
          contentId: a.contentId,
          disposition: a.disposition,
          checksum: a.checksum,
          content: new Uint8Array(a.content),
          stored: true,
        })),
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
    return { emailId, deliveryIds };
  }, TX_OPTIONS);
  if (!stored) return { outcome: "skipped", reason: "processed concurrently" };
  await enqueuePendingDeliveries(deps, stored.emailId);
  deps.logger.info({ emailId: stored.emailId, deliveries: stored.deliveryIds.length }, "email stored");
  return { outcome: "stored", ...stored };
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
