import { z } from "zod";
import { timestamp } from "./schemas.ts";

/** `GET /emails/{id}/events` (ops/email-events.ts): one message's story as typed events, in order. */

const verdict = (name: string) =>
  z.strictObject({
    verdict: z.string().nullable().describe(`${name}: PASS, FAIL, GRAY or PROCESSING_FAILED (null: not computed)`),
    reason: z.string().nullable().describe("why, in words, when the pipeline recorded one"),
  });

const receivedEvent = z
  .strictObject({
    type: z.literal("received"),
    at: timestamp.describe("when the SMTP transaction was accepted (250)"),
    mailFrom: z.string().nullable().describe("envelope sender (MAIL FROM)"),
    recipient: z.string().nullable().describe("envelope recipient this copy was accepted for"),
    clientIp: z.string().nullable(),
    helo: z.string().nullable().describe("the name the client gave in HELO/EHLO"),
    tls: z
      .strictObject({ protocol: z.string(), cipher: z.string() })
      .nullable()
      .describe("the STARTTLS session; null: the client did not use TLS"),
    sizeBytes: z.number().int().nullable(),
  })
  .meta({ id: "EmailEventReceived" });

const authenticatedEvent = z
  .strictObject({
    type: z.literal("authenticated"),
    at: timestamp,
    spf: verdict("SPF"),
    dkim: verdict("DKIM"),
    dmarc: verdict("DMARC").extend({
      overriddenByArc: z.boolean().describe("a DMARC failure vouched for by a trusted ARC sealer"),
    }),
    arc: verdict("ARC"),
    spam: verdict("Spam"),
    virus: verdict("Virus (ClamAV)"),
  })
  .meta({ id: "EmailEventAuthenticated" });

const shieldEvent = z
  .strictObject({
    type: z.literal("shield"),
    at: timestamp,
    decision: z.enum(["none", "allow", "route"]).describe("none: no rule matched (blocked mail is never stored)"),
    action: z.string().nullable().describe("the deciding rule's action as stored with the email"),
    rule: z
      .strictObject({
        id: z.string(),
        name: z.string().nullable().describe("null when the rule has been deleted since"),
        priority: z.number().int().nullable(),
        changedSince: z.boolean().describe("edited (or deleted) after this message was processed"),
        deleted: z.boolean(),
        conditions: z
          .array(
            z.strictObject({
              field: z.string(),
              operator: z.string(),
              value: z.string().nullable(),
              matched: z.boolean().describe("the condition re-checked against the stored message"),
            }),
          )
          .describe("the rule's current conditions"),
      })
      .nullable(),
    reason: z.string(),
  })
  .meta({ id: "EmailEventShield" });

const storedEvent = z
  .strictObject({
    type: z.literal("stored"),
    at: timestamp,
    threadId: z.string(),
    processingTries: z.number().int().nullable().describe("rule-engine tries it took (null: not received over SMTP)"),
  })
  .meta({ id: "EmailEventStored" });

const sentEvent = z
  .strictObject({
    type: z.literal("sent"),
    at: timestamp,
    status: z.string().describe("queued | retrying | sent | failed"),
    attempts: z.number().int(),
    lastReply: z.string().nullable().describe("the relay's last reply, or the connection error"),
    sentAt: timestamp.nullable(),
  })
  .meta({ id: "EmailEventSent" });

const deliveryEvent = z
  .strictObject({
    type: z.literal("delivery"),
    at: timestamp.describe("when the delivery was created"),
    deliveryId: z.string(),
    endpoint: z.strictObject({ id: z.string(), name: z.string(), type: z.string() }),
    status: z.enum(["pending", "retrying", "delivered", "dead"]),
    attemptCount: z.number().int(),
    maxAttempts: z.number().int(),
    nextAttemptAt: timestamp.nullable(),
    deliveredAt: timestamp.nullable(),
    attempts: z
      .array(
        z.strictObject({
          number: z.number().int(),
          statusCode: z.number().int().nullable().describe("null when no response arrived"),
          error: z.string().nullable().describe("null on success"),
          durationMs: z.number().int(),
          responseExcerpt: z.string().describe("the first 300 characters of the response (GET /deliveries/{id}: 4 KB)"),
          startedAt: timestamp,
          finishedAt: timestamp,
        }),
      )
      .describe("oldest first"),
  })
  .meta({ id: "EmailEventDelivery" });

export const emailEventsSchema = z
  .strictObject({
    emailId: z.string(),
    direction: z.enum(["inbound", "outbound"]),
    events: z
      .array(
        z.discriminatedUnion("type", [
          receivedEvent,
          authenticatedEvent,
          shieldEvent,
          storedEvent,
          sentEvent,
          deliveryEvent,
        ]),
      )
      .describe(
        "inbound: received, authenticated, shield, stored, then one delivery per destination; outbound: stored, sent, deliveries",
      ),
  })
  .meta({ id: "EmailEvents" });
