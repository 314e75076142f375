import { timestampSchema } from "@mailroom/core";
import { z } from "zod";

/**
 * Response shapes of the REST API (spec §2), as zod schemas. They feed the OpenAPI document and the
 * test that checks every documented shape against what the routes actually return. Objects are
 * strict so that an undocumented extra field is caught too.
 */
/** Spec §2: ISO 8601, UTC (`Z`), exactly three fractional digits — what `Date#toISOString` gives. */
export const timestamp = timestampSchema;
const id = (prefix: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[0-9A-Za-z]+$`))
    .describe(`\`${prefix}_…\``);

export const errorSchema = z.strictObject({ error: z.string() });

export const dnsRecordSchema = z
  .strictObject({
    type: z.string(),
    name: z.string(),
    value: z.string(),
    priority: z.number().int().optional().describe("MX records only"),
  })
  .meta({ id: "DnsRecord" });

export const domainSchema = z
  .strictObject({
    id: id("dom"),
    domain: z.string(),
    status: z.enum(["pending", "verified", "failed"]),
    dkimTokens: z.array(z.string()),
    dnsRecords: z.array(dnsRecordSchema),
    catchAll: z.strictObject({
      enabled: z.boolean(),
      endpointId: id("ep").nullable().describe("null: catch-all mail is stored, not delivered"),
    }),
    verifiedAt: timestamp.nullable(),
    lastCheckedAt: timestamp.nullable(),
    warning: z.string().nullable(),
    createdAt: timestamp,
    dkimSelector: z.string().nullable().describe("outbound DKIM selector: the first DKIM token"),
    dkimPublicKey: z.string().nullable().describe("base64 public key (the p= of the DKIM TXT record)"),
    dkimRecord: dnsRecordSchema.nullable().describe("TXT record the operator publishes at the selector's CNAME target"),
  })
  .meta({ id: "Domain" });

export const addressSchema = z
  .strictObject({
    id: id("addr"),
    domainId: id("dom"),
    localPart: z.string(),
    endpointId: id("ep").nullable(),
    active: z.boolean(),
    createdAt: timestamp,
  })
  .meta({ id: "Address" });

export const addressWithDomainSchema = addressSchema
  .extend({ domain: z.string(), address: z.string() })
  .meta({ id: "AddressWithDomain" });

export const endpointSchema = z
  .strictObject({
    id: id("ep"),
    name: z.string(),
    type: z.enum(["webhook", "slack", "discord", "email"]),
    url: z.string(),
    headers: z.record(z.string(), z.string()),
    timeoutSeconds: z.number().int(),
    maxAttempts: z.number().int(),
    active: z.boolean(),
    createdAt: timestamp,
    failingSince: timestamp
      .nullable()
      .describe(
        "null while deliveries succeed; otherwise since when the endpoint has been failing (the first of the failed attempts in a row that opened its circuit): its due deliveries then wait for one probe attempt at a time",
      ),
  })
  .meta({ id: "Endpoint" });

export const endpointWithSecretSchema = endpointSchema
  .extend({
    secret: z
      .string()
      .regex(/^whsec_/)
      .describe("shown only in this response"),
  })
  .meta({ id: "EndpointWithSecret" });

// The Email object is shared with the webhook payload: one definition, in @mailroom/core.
export { attachmentSchema, emailSchema } from "@mailroom/core";

export const emailSummarySchema = z
  .strictObject({
    id: id("em"),
    direction: z.enum(["inbound", "outbound"]),
    threadId: id("thr"),
    messageId: z.string(),
    fromAddress: z.string(),
    toAddresses: z.array(z.string()),
    subject: z.string(),
    spamVerdict: z.string().nullable(),
    attachmentCount: z.number().int(),
    receivedAt: timestamp,
  })
  .meta({ id: "EmailSummary" });

export const threadSummarySchema = z
  .strictObject({
    id: id("thr"),
    subject: z.string(),
    messageCount: z.number().int(),
    lastMessageAt: timestamp,
    createdAt: timestamp,
  })
  .meta({ id: "ThreadSummary" });

export const threadSchema = z
  .strictObject({ threadId: id("thr"), data: z.array(emailSummarySchema) })
  .meta({ id: "Thread" });

export const accountSchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    plan: z.string().describe("selfhosted | free | scale"),
    limits: z.strictObject({
      shieldRules: z.number().int().nullable().describe("rule cap of the plan; null: no cap"),
      monthlyAllotment: z
        .number()
        .int()
        .nullable()
        .describe("received messages per calendar month (UTC), blocked ones included; null: no allotment"),
    }),
    usage: z.strictObject({
      month: z.string().describe("YYYY-MM (UTC)"),
      received: z.number().int(),
      remaining: z.number().int().nullable().describe("null when the plan has no allotment"),
      shieldRules: z.number().int(),
    }),
    retentionDays: z
      .number()
      .int()
      .nullable()
      .describe(
        "mail older than this many days is deleted (emails, raw MIME, attachments, blocks, deliveries); null: kept forever",
      ),
    defaultRetentionDays: z
      .number()
      .int()
      .nullable()
      .describe("what new accounts on this installation keep (the operator's DEFAULT_RETENTION_DAYS); null: forever"),
    createdAt: timestamp,
  })
  .meta({ id: "Account" });

/** `{ data, nextCursor }`: every paginated list. */
export const pageOf = (item: z.ZodType) =>
  z.strictObject({
    data: z.array(item),
    nextCursor: z.string().nullable().describe("pass back as `cursor`; null at the end"),
  });

/** `:id` path parameter. */
export const idParams = z.object({ id: z.string() });

/** limit 1..100 (default 50) and an opaque cursor: the query of every list (spec §8). */
export const pageQueryShape = {
  limit: z.coerce
    .number({ error: "must be a whole number from 1 to 100" })
    .int("must be a whole number from 1 to 100")
    .min(1, "must be a whole number from 1 to 100")
    .max(100, "must be a whole number from 1 to 100")
    .default(50)
    .describe("items per page, 1 to 100 (default 50)"),
  // No length rule: an empty or malformed cursor is answered by the codec with spec §7's "Invalid cursor".
  cursor: z
    .string({ error: "must be a single string" })
    .optional()
    .describe("opaque; the `nextCursor` of the previous page"),
};
