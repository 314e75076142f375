import { z } from "zod";

/**
 * The Email object and the `email.received` event as zod schemas. One definition serves three
 * readers: the dispatcher parses every payload through `emailReceivedEventSchema` before it is
 * serialized, the REST API answers `GET /emails/{id}` with `emailSchema`, and the OpenAPI document
 * (paths and `webhooks`) is generated from both. `.meta({ id })` names them in the document's
 * components.
 */

/** Spec §2: ISO 8601, UTC (`Z`), exactly three fractional digits — what `Date#toISOString` gives. */
export const timestampSchema = z.iso.datetime({ precision: 3 }).describe("ISO 8601 UTC timestamp with milliseconds");

export const prefixedId = (prefix: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[0-9A-Za-z]+$`))
    .describe(`\`${prefix}_…\``);

export const attachmentSchema = z
  .strictObject({
    filename: z.string(),
    contentType: z.string(),
    size: z.number().int(),
    stored: z.boolean(),
    url: z.string().nullable().describe("download URL when stored"),
  })
  .meta({ id: "Attachment" });

export const emailSchema = z
  .strictObject({
    id: prefixedId("em"),
    direction: z.enum(["inbound", "outbound"]),
    threadId: prefixedId("thr"),
    messageId: z.string(),
    inReplyTo: z.string().nullable(),
    fromAddress: z.string(),
    toAddresses: z.array(z.string()),
    ccAddresses: z.array(z.string()),
    subject: z.string(),
    textBody: z.string(),
    strippedText: z
      .string()
      .describe(
        'textBody without the quoted history ("On … wrote:" and its localized forms, Outlook header blocks, ' +
          'forwarded messages) and without the signature ("-- ", "Sent from my iPhone"): what the sender ' +
          "wrote in this message. Empty when it holds nothing else",
      ),
    htmlBody: z.string(),
    attachments: z.array(attachmentSchema),
    spamVerdict: z.string().nullable(),
    spfVerdict: z.string(),
    dkimVerdict: z.string(),
    dmarcVerdict: z.string().describe("DMARC as evaluated on arrival; a FAIL stays FAIL when dmarcOverridden is true"),
    dmarcOverridden: z
      .boolean()
      .describe(
        "DMARC failed, but a valid ARC chain whose newest seal is by a sealer the operator trusts " +
          "(ARC_TRUSTED_SEALERS), and which recorded dmarc=pass, vouched for the message (RFC 8617 local policy); " +
          "verdictReasons.dmarc says why",
      ),
    arcVerdict: z
      .string()
      .describe("the ARC chain (RFC 8617): PASS, FAIL, GRAY when the message carries none; DISABLED on outbound mail"),
    virusVerdict: z
      .string()
      .describe(
        "ClamAV: PASS, FAIL (virusSignature names what was found), GRAY when no scan result (clamd not " +
          "configured, unreachable, past its deadline, or refusing the message), PROCESSING_FAILED; DISABLED on outbound mail",
      ),
    virusSignature: z.string().nullable().describe("ClamAV's signature name when virusVerdict is FAIL"),
    verdictReasons: z
      .strictObject({
        virus: z.string().nullable().describe("clamd's answer, or why there is none"),
        arc: z
          .string()
          .nullable()
          .describe("the ARC chain's result: instance, sealer, what it recorded, or why it failed"),
        dmarc: z
          .string()
          .nullable()
          .describe("whether a DMARC failure was overridden by a trusted ARC sealer, and why"),
      })
      .describe("why the virus, ARC and DMARC-override verdicts are what they are; null where there is nothing to say"),
    receivedAt: timestampSchema,
    sanitized: z
      .array(z.string())
      .describe(
        "fields (e.g. subject, textBody, headers.value, attachments.filename) whose decoded text held characters " +
          "Postgres cannot store (U+0000, lone surrogates), each replaced with U+FFFD; the raw message is unchanged. " +
          "Usually empty",
      ),
    received: z
      .strictObject({
        clientIp: z
          .string()
          .describe(
            "address of the SMTP client that handed the message to us (behind a PROXY protocol load balancer: the client's, not the balancer's)",
          ),
        helo: z.string().nullable().describe("the name the client gave in HELO/EHLO"),
        tls: z
          .strictObject({
            protocol: z.string().describe("negotiated TLS version, e.g. `TLSv1.3`"),
            cipher: z.string().describe("OpenSSL cipher name, e.g. `TLS_AES_256_GCM_SHA384`"),
          })
          .nullable()
          .describe("the STARTTLS session the message came in on; null when the client did not use TLS"),
      })
      .nullable()
      .describe(
        "inbound mail only: who handed the message to us over SMTP, as in the `Received:` header we add at the top of the raw message; null on outbound mail",
      ),
    send: z
      .strictObject({
        status: z.enum(["queued", "sending", "retrying", "sent", "failed"]),
        attempts: z.number().int(),
        lastReply: z.string().nullable().describe("the SMTP relay's last reply, or the connection error"),
        sentAt: timestampSchema.nullable(),
      })
      .nullable()
      .describe("outbound mail only: hand-off to the SMTP relay; null on inbound mail"),
  })
  .meta({ id: "Email" });

export const emailReceivedEventSchema = z
  .strictObject({
    id: prefixedId("dlv").describe(
      "the delivery id: the same on every attempt of one delivery (also `X-Service-Delivery-Id` and `webhook-id`); use it to drop duplicates",
    ),
    type: z.literal("email.received"),
    createdAt: timestampSchema.describe("when the delivery was created (not when this attempt was made)"),
    data: z.strictObject({
      email: emailSchema,
      domain: z.string().describe("the receiving domain"),
      address: z.string().describe("the recipient address this delivery is for"),
      endpointId: prefixedId("ep"),
    }),
  })
  .meta({ id: "EmailReceivedEvent", description: "Body of every `email.received` webhook delivery" });
