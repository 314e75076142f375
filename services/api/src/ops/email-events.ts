import { AppError, type Condition, evaluateCondition, type MessageFacts } from "@mailroom/core";
import type { OpsContext } from "./context.ts";

/**
 * `GET /emails/{id}/events`: what happened to one message, in order. Received over SMTP (client,
 * HELO, TLS), authenticated (SPF, DKIM, DMARC, ARC, spam, virus, each with its reason), the shield's
 * decision (the rule and its conditions, each re-checked against the stored message), stored, then
 * each delivery with every attempt. Built from the rows the pipeline keeps; nothing is recorded twice.
 */

/** Enough of an endpoint's answer to see what it said; the whole 4 KB is on GET /deliveries/{id}. */
export const RESPONSE_EXCERPT_CHARS = 300;

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
const text = (v: unknown) => (typeof v === "string" ? v : null);

type Loaded = NonNullable<Awaited<ReturnType<typeof loadEmail>>>;

function loadEmail(ctx: OpsContext, accountId: string, id: string) {
  return ctx.prisma.email.findFirst({
    where: { id, accountId },
    include: {
      attachments: { select: { filename: true, contentType: true } },
      spool: {
        select: {
          mailFrom: true,
          remoteIp: true,
          helo: true,
          tlsProtocol: true,
          tlsCipher: true,
          size: true,
          receivedAt: true,
        },
      },
      spoolRecipient: { select: { attempts: true, processedAt: true } },
      deliveries: {
        orderBy: [{ createdAt: "asc" }, { id: "asc" }],
        include: {
          endpoint: { select: { id: true, name: true, type: true } },
          attempts: { orderBy: { number: "asc" } },
        },
      },
    },
  });
}

function receivedEvent(e: Loaded) {
  const s = e.spool;
  return {
    type: "received" as const,
    at: (s?.receivedAt ?? e.receivedAt).toISOString(),
    mailFrom: s?.mailFrom ?? null,
    recipient: e.recipient,
    clientIp: s?.remoteIp ?? null,
    helo: s?.helo ?? null,
    tls: s?.tlsProtocol ? { protocol: s.tlsProtocol, cipher: s.tlsCipher ?? "" } : null,
    sizeBytes: s?.size ?? null,
  };
}

function verdictsEvent(e: Loaded) {
  const why =
    e.verdictReasons && typeof e.verdictReasons === "object" ? (e.verdictReasons as Record<string, unknown>) : {};
  return {
    type: "authenticated" as const,
    at: e.createdAt.toISOString(),
    spf: { verdict: e.spfVerdict, reason: null },
    dkim: { verdict: e.dkimVerdict, reason: null },
    dmarc: { verdict: e.dmarcVerdict, reason: text(why.dmarc), overriddenByArc: e.dmarcOverridden },
    arc: { verdict: e.arcVerdict, reason: text(why.arc) },
    spam: { verdict: e.spamVerdict, reason: e.spamScore === null ? null : `score ${e.spamScore}` },
    virus: { verdict: e.virusVerdict, reason: text(why.virus) ?? e.virusSignature },
  };
}

/** The facts the rule engine evaluated, rebuilt from the stored message (shield.ts messageFacts). */
function factsOf(e: Loaded): MessageFacts {
  const to = [e.recipient ?? "", ...e.toAddresses, ...e.ccAddresses].filter(Boolean).map((a) => a.toLowerCase());
  return {
    from: e.fromAddress,
    to: [...new Set(to)],
    subject: e.subject,
    body: e.textBody,
    attachments: e.attachments,
    spamVerdict: e.spamVerdict,
    spfVerdict: e.spfVerdict,
    dkimVerdict: e.dkimVerdict,
    dmarcVerdict: e.dmarcVerdict,
    arcVerdict: e.arcVerdict,
    virusVerdict: e.virusVerdict,
    dmarcOverridden: e.dmarcOverridden,
  };
}

const ACTION_TEXT: Record<string, string> = {
  allow: "allowed it: delivered to the address's destination, no later rule evaluated",
  route: "routed it to the rule's destinations instead of the address's own",
};

async function shieldEvent(ctx: OpsContext, accountId: string, e: Loaded) {
  const base = { type: "shield" as const, at: e.createdAt.toISOString(), action: e.shieldAction };
  if (!e.shieldRuleId) {
    return {
      ...base,
      decision: "none" as const,
      rule: null,
      reason: "No enabled shield rule in scope matched: delivered to the address's own destination.",
    };
  }
  const rule = await ctx.prisma.shieldRule.findFirst({ where: { id: e.shieldRuleId, accountId } });
  const action = e.shieldAction ?? "allow";
  const decision = action === "route" ? ("route" as const) : ("allow" as const);
  if (!rule) {
    return {
      ...base,
      decision,
      rule: { id: e.shieldRuleId, name: null, priority: null, changedSince: true, deleted: true, conditions: [] },
      reason: `Rule ${e.shieldRuleId} ${ACTION_TEXT[action] ?? action}; it has been deleted since.`,
    };
  }
  const facts = factsOf(e);
  const changedSince = rule.updatedAt > e.createdAt;
  const conditions = (rule.conditions as Condition[]).map((c) => ({
    field: c.field,
    operator: c.operator,
    value: "value" in c && typeof c.value === "string" ? c.value : null,
    matched: evaluateCondition(facts, c),
  }));
  return {
    ...base,
    decision,
    rule: { id: rule.id, name: rule.name, priority: rule.priority, changedSince, deleted: false, conditions },
    reason:
      `Rule "${rule.name}" matched all ${conditions.length} condition(s) and ${ACTION_TEXT[action] ?? action}.` +
      (changedSince ? " The rule has been edited since; the conditions shown are its current ones." : ""),
  };
}

function storedEvent(e: Loaded) {
  return {
    type: "stored" as const,
    at: e.createdAt.toISOString(),
    threadId: e.threadId,
    processingTries: e.spoolRecipient?.attempts ?? null,
  };
}

function sentEvent(e: Loaded) {
  return {
    type: "sent" as const,
    at: (e.sentAt ?? e.createdAt).toISOString(),
    status: e.sendStatus ?? "queued",
    attempts: e.sendAttempts,
    lastReply: e.sendLastReply,
    sentAt: iso(e.sentAt),
  };
}

function deliveryEvent(d: Loaded["deliveries"][number]) {
  return {
    type: "delivery" as const,
    at: d.createdAt.toISOString(),
    deliveryId: d.id,
    endpoint: { id: d.endpoint.id, name: d.endpoint.name, type: d.endpoint.type },
    status: d.status,
    attemptCount: d.attemptCount,
    maxAttempts: d.maxAttempts,
    nextAttemptAt: iso(d.nextAttemptAt),
    deliveredAt: iso(d.deliveredAt),
    attempts: d.attempts.map((a) => ({
      number: a.number,
      statusCode: a.statusCode,
      error: a.error,
      durationMs: a.durationMs,
      responseExcerpt: (a.responseBody ?? "").slice(0, RESPONSE_EXCERPT_CHARS),
      startedAt: a.startedAt.toISOString(),
      finishedAt: a.finishedAt.toISOString(),
    })),
  };
}

export async function getEmailEvents(ctx: OpsContext, accountId: string, id: string) {
  const e = await loadEmail(ctx, accountId, id);
  if (!e) throw new AppError("not_found", "Email not found");
  const deliveries = e.deliveries.map(deliveryEvent);
  if (e.direction === "outbound") {
    return { emailId: e.id, direction: "outbound", events: [storedEvent(e), sentEvent(e), ...deliveries] };
  }
  return {
    emailId: e.id,
    direction: "inbound",
    events: [receivedEvent(e), verdictsEvent(e), await shieldEvent(ctx, accountId, e), storedEvent(e), ...deliveries],
  };
}
