import { deliveryHeaders, emailReceivedPayload, emailView, signatureHeader } from "@mailroom/core";
import { newId, type PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { enqueue, type Queue } from "@mailroom/queues";
import { retryDelayMs } from "./backoff.ts";

export type SendRequest = { url: string; body: string; headers: Record<string, string>; timeoutMs: number };
export type SendResult = { status: number | null; body: string; durationMs: number; error: string | null };
export type Send = (req: SendRequest) => Promise<SendResult>;

export type DispatchDeps = {
  prisma: PrismaClient;
  queue: Queue;
  logger: Logger;
  send: Send;
  publicApiUrl: string;
  backoffUnitMs: number;
  now?: () => Date;
};

export type AttemptOutcome =
  | { outcome: "delivered"; attempt: number }
  | { outcome: "retrying"; attempt: number; nextAttemptAt: Date }
  | { outcome: "dead"; attempt: number }
  | { outcome: "skipped"; reason: string };

const USER_AGENT = "mailroom-webhooks/1.0";

/**
 * One delivery attempt (DESIGN.md §3.3). The Delivery row is the source of truth: the attempt is
 * recorded and the next one scheduled in one transaction that only succeeds if no other worker
 * recorded this attempt number first.
 */
export async function attemptDelivery(deps: DispatchDeps, deliveryId: string): Promise<AttemptOutcome> {
  const { prisma } = deps;
  const now = deps.now ?? (() => new Date());
  const d = await prisma.delivery.findUnique({
    where: { id: deliveryId },
    include: {
      endpoint: true,
      email: {
        include: {
          attachments: { select: { index: true, filename: true, contentType: true, size: true, stored: true } },
          domain: { select: { domain: true } },
        },
      },
    },
  });
  if (!d) return { outcome: "skipped", reason: "delivery not found" };
  if (d.status === "delivered" || d.status === "dead") return { outcome: "skipped", reason: `already ${d.status}` };

  const attempt = d.attemptCount + 1;
  const payload = emailReceivedPayload({
    deliveryId: d.id,
    createdAt: d.createdAt,
    email: emailView(d.email, d.email.attachments, deps.publicApiUrl),
    domain: d.email.domain?.domain ?? "",
    address: d.email.recipient ?? "",
    endpointId: d.endpointId,
  });
  const body = JSON.stringify(payload);
  const headers = buildHeaders(d.endpoint, d.id, body, now());

  const startedAt = now();
  const result = await deps.send({ url: d.endpoint.url, body, headers, timeoutMs: d.endpoint.timeoutSeconds * 1000 });
  const finishedAt = now();
  const ok = result.error === null && result.status !== null && result.status >= 200 && result.status < 300;
  const exhausted = attempt >= d.maxAttempts;
  const nextAttemptAt =
    ok || exhausted ? null : new Date(finishedAt.getTime() + retryDelayMs(attempt, deps.backoffUnitMs));
  const status = ok ? "delivered" : exhausted ? "dead" : "retrying";

  const recorded = await prisma.$transaction(async (tx) => {
    const claimed = await tx.delivery.updateMany({
      where: { id: d.id, attemptCount: d.attemptCount },
      data: {
        attemptCount: attempt,
        status,
        nextAttemptAt,
        lastStatusCode: result.status,
        lastError: ok ? null : (result.error ?? `HTTP ${result.status}`),
        deliveredAt: ok ? finishedAt : null,
      },
    });
    if (claimed.count === 0) return false;
    await tx.deliveryAttempt.create({
      data: {
        id: newId("deliveryAttempt"),
        deliveryId: d.id,
        number: attempt,
        statusCode: result.status,
        durationMs: result.durationMs,
        error: ok ? null : (result.error ?? `HTTP ${result.status}`),
        responseBody: result.body.slice(0, 4096),
        startedAt,
        finishedAt,
      },
    });
    return true;
  });
  if (!recorded) return { outcome: "skipped", reason: "attempt recorded by another worker" };

  if (nextAttemptAt) {
    await enqueue(
      deps.queue,
      "delivery",
      { deliveryId: d.id },
      {
        jobId: `${d.id}.${attempt + 1}`,
        delay: Math.max(0, nextAttemptAt.getTime() - Date.now()),
      },
    );
    return { outcome: "retrying", attempt, nextAttemptAt };
  }
  return ok ? { outcome: "delivered", attempt } : { outcome: "dead", attempt };
}

type EndpointForHeaders = {
  type: string;
  headers: unknown;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
};

/** Custom headers first, so ours (already refused as custom names at create) always win. */
export function buildHeaders(
  endpoint: EndpointForHeaders,
  deliveryId: string,
  body: string,
  at: Date,
): Record<string, string> {
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > at) {
    secrets.push(endpoint.previousSecret);
  }
  // Slack and Discord deliveries are not signed (spec §6.1).
  const signature = endpoint.type === "webhook" ? signatureHeader(secrets, body, at.getTime() / 1000) : null;
  return {
    ...((endpoint.headers ?? {}) as Record<string, string>),
    "Content-Type": "application/json",
    "User-Agent": USER_AGENT,
    ...deliveryHeaders(deliveryId, signature),
  };
}
