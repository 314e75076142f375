import { AppError } from "@mailroom/core";
import { type DeliveryQueues, enqueueDeliveryAttempt } from "@mailroom/deliveries";
import { z } from "zod";
import { after, decodeCursor, newestFirst, toPage } from "../lib/pagination.ts";
import { pageQueryShape, timestamp } from "../lib/schemas.ts";
import type { OpsContext } from "./context.ts";

/**
 * Delivery history and replay. A delivery is one email → endpoint attempt chain: one id across all
 * its attempts (the `X-Service-Delivery-Id` header), its row the source of truth for the schedule.
 */

export const deliveryStatus = z.enum(["pending", "retrying", "delivered", "dead"]);

export const deliverySchema = z
  .strictObject({
    id: z.string().regex(/^dlv_[0-9A-Za-z]+$/),
    emailId: z.string(),
    endpointId: z.string(),
    status: deliveryStatus.describe("pending → (retrying →)* delivered | dead"),
    attemptCount: z.number().int().describe("attempts made so far"),
    maxAttempts: z.number().int().describe("attempts allowed in total; a manual retry raises it"),
    nextAttemptAt: timestamp.nullable().describe("when the next attempt is due; null once delivered or dead"),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    deliveredAt: timestamp.nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: "Delivery" });

export const deliveryAttemptSchema = z
  .strictObject({
    number: z.number().int(),
    statusCode: z.number().int().nullable().describe("null when no response arrived"),
    durationMs: z.number().int(),
    error: z
      .string()
      .nullable()
      .describe("null on success: timeout, unreachable, non-public URL, redirect, HTTP <status>"),
    responseBody: z.string().describe("first 4 KB of the endpoint's response"),
    startedAt: timestamp,
    finishedAt: timestamp,
  })
  .meta({ id: "DeliveryAttempt" });

export const deliveryWithAttemptsSchema = deliverySchema
  .extend({
    attempts: z.array(deliveryAttemptSchema).describe("oldest first"),
  })
  .meta({ id: "DeliveryWithAttempts" });

const idFilter = (prefix: string) =>
  z
    .string({ error: "must be a single string" })
    .regex(new RegExp(`^${prefix}_[0-9A-Za-z]+$`), `must be an id starting with ${prefix}_`)
    .optional();

export const listDeliveriesQuery = z
  .object({
    ...pageQueryShape,
    emailId: idFilter("em").describe("only deliveries of this email (em_…)"),
    endpointId: idFilter("ep").describe("only deliveries to this endpoint (ep_…)"),
    status: z
      .enum(deliveryStatus.options, "must be pending, retrying, delivered or dead")
      .optional()
      .describe("only deliveries in this state"),
  })
  .strict();

type DeliveryRow = {
  id: string;
  emailId: string;
  endpointId: string;
  status: string;
  attemptCount: number;
  maxAttempts: number;
  nextAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
};

type AttemptRow = {
  number: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
  startedAt: Date;
  finishedAt: Date;
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function deliveryView(d: DeliveryRow) {
  return {
    id: d.id,
    emailId: d.emailId,
    endpointId: d.endpointId,
    status: d.status as z.infer<typeof deliveryStatus>,
    attemptCount: d.attemptCount,
    maxAttempts: d.maxAttempts,
    nextAttemptAt: iso(d.nextAttemptAt),
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    deliveredAt: iso(d.deliveredAt),
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  };
}

export function attemptView(a: AttemptRow) {
  return {
    number: a.number,
    statusCode: a.statusCode,
    durationMs: a.durationMs,
    error: a.error,
    responseBody: a.responseBody ?? "",
    startedAt: a.startedAt.toISOString(),
    finishedAt: a.finishedAt.toISOString(),
  };
}

/** Newest first; filters combine (AND). */
export async function listDeliveries(ctx: OpsContext, accountId: string, q: z.output<typeof listDeliveriesQuery>) {
  const pos = decodeCursor(ctx.cursors, q.cursor);
  const rows = await ctx.prisma.delivery.findMany({
    where: {
      accountId,
      ...(q.emailId ? { emailId: q.emailId } : {}),
      ...(q.endpointId ? { endpointId: q.endpointId } : {}),
      ...(q.status ? { status: q.status } : {}),
      ...after("createdAt", pos),
    },
    orderBy: newestFirst("createdAt"),
    take: q.limit + 1,
  });
  return toPage(ctx.cursors, rows, q.limit, (r) => r.createdAt, deliveryView);
}

export async function getDelivery(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.delivery.findFirst({
    where: { id, accountId },
    include: { attempts: { orderBy: { number: "asc" } } },
  });
  if (!row) throw new AppError("not_found", "Delivery not found");
  return { ...deliveryView(row), attempts: row.attempts.map(attemptView) };
}

/**
 * Replay: re-opens a dead or delivered delivery with a fresh budget of the endpoint's current
 * `maxAttempts`, under the same delivery id. Attempt numbers keep counting (history is kept);
 * `attemptBase` restarts the backoff at 1 minute. One still pending or retrying is refused (409):
 * it is already scheduled.
 */
export async function retryDelivery(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.delivery.findFirst({ where: { id, accountId }, include: { endpoint: true } });
  if (!row) throw new AppError("not_found", "Delivery not found");
  if (row.status !== "dead" && row.status !== "delivered") {
    throw new AppError("conflict", `Delivery is ${row.status}: its next attempt is already scheduled`);
  }
  const now = new Date();
  // Guarded on status and attemptCount: two concurrent retries re-open it once.
  const reopened = await ctx.prisma.delivery.updateMany({
    where: { id: row.id, status: row.status, attemptCount: row.attemptCount },
    data: {
      status: "pending",
      attemptBase: row.attemptCount,
      maxAttempts: row.attemptCount + row.endpoint.maxAttempts,
      nextAttemptAt: now,
      deliveredAt: null,
    },
  });
  if (reopened.count === 0) throw new AppError("conflict", "Delivery changed concurrently; fetch it and try again");
  if (ctx.enqueueDelivery) {
    await ctx
      .enqueueDelivery({ id: row.id, endpointType: row.endpoint.type }, row.attemptCount + 1)
      .catch((err: Error) => {
        // The row is re-opened and due: its worker's sweeper queues it when Redis is back.
        ctx.logger.warn({ deliveryId: row.id, err: err.message }, "could not queue the retried delivery");
      });
  }
  return getDelivery(ctx, accountId, row.id);
}

/** `enqueueDelivery` for the API's context: on the destination type's queue (enqueueDeliveryAttempt). */
export const deliveryEnqueuer =
  (queues: DeliveryQueues) =>
  async (delivery: { id: string; endpointType: string }, attempt: number): Promise<void> => {
    await enqueueDeliveryAttempt(queues, delivery, attempt);
  };
