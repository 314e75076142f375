/**
 * The `store` and `block` steps of processRecipient, in as few statements as their guarantees allow
 * (issue 13). The email's transaction is BEGIN, the duplicate lock, ONE statement that does the
 * duplicate check, the claim of the recipient, the thread, the Email row, its attachment rows and
 * its Deliveries, then COMMIT: what used to be 8–12 statements through Prisma, one after another.
 * Plain node-postgres on the Prisma client's pool: Prisma's per-query work was most of the CPU these
 * statements cost, and it copies large text values (a 25 MB body) many times over.
 */
import { type Column, checkout, newId, type Queryable, type Row } from "@mailroom/db";
import type pg from "pg";
import type { ParsedEmail } from "./parse.ts";

export type EmailRow = {
  accountId: string;
  /** Null when the domain / address was deleted after the message was accepted. */
  domainId: string | null;
  addressId: string | null;
  recipient: string;
  plusTag: string | null;
  spamVerdict: string;
  spamScore: number | null;
  spfVerdict: string;
  dkimVerdict: string;
  dmarcVerdict: string;
  virusVerdict: string;
  /** ClamAV's signature name when virusVerdict is FAIL. */
  virusSignature: string | null;
  arcVerdict: string;
  dmarcOverridden: boolean;
  /** Why each verdict is what it is, in words (clamd's answer, the ARC chain, the override). */
  verdictReasons: { virus: string | null; arc: string | null; dmarc: string | null };
  shieldRuleId: string | null;
  shieldAction: string | null;
  contentHash: string;
  sanitized: string[];
  spoolId: string;
  spoolRecipientId: string;
  receivedAt: Date;
  /** The processing span's W3C traceparent (delivery attempts join its trace); null without tracing. */
  traceparent: string | null;
};

export type StoreInput = {
  row: EmailRow;
  email: ParsedEmail;
  /** Candidate endpoints; only those of the account get a Delivery (as before: a rule may name a deleted one). */
  endpointIds: string[];
  /** Same account + recipient + Message-ID + content hash received since this instant: a duplicate. */
  duplicateSince: Date;
};

export type StoreResult =
  /** `deliveries`: with each one's endpoint type, which picks its queue (enqueueDeliveryAttempt). */
  | {
      kind: "stored";
      emailId: string;
      deliveryIds: string[];
      deliveries: { id: string; endpointType: string; endpointId: string }[];
    }
  | { kind: "duplicate"; emailId: string }
  /** The recipient was not pending any more: another worker processed it. */
  | { kind: "claimed-elsewhere" };

type EmailColumn = {
  [C in Column<"emails">]: [column: C, type: string, value: (i: StoreInput) => Row<"emails">[C]];
}[Column<"emails">];

// The email's columns, in the INSERT's order, with the value each takes from the input and its SQL
// type. One list, so adding a column is one line here; each name and value type is checked against
// the schema's Email model (a jsonb value is sent as its JSON text, which the model's JsonValue admits).
const EMAIL_COLUMNS: EmailColumn[] = [
  ["accountId", "text", (i) => i.row.accountId],
  ["domainId", "text", (i) => i.row.domainId],
  ["addressId", "text", (i) => i.row.addressId],
  ["direction", "text", () => "inbound"],
  ["messageId", "text", (i) => i.email.messageId],
  ["inReplyTo", "text", (i) => i.email.inReplyTo],
  ["references", "text[]", (i) => i.email.references],
  ["fromAddress", "text", (i) => i.email.fromAddress],
  ["fromName", "text", (i) => i.email.fromName],
  ["toAddresses", "text[]", (i) => i.email.toAddresses],
  ["ccAddresses", "text[]", (i) => i.email.ccAddresses],
  ["replyTo", "text[]", (i) => i.email.replyTo],
  ["sanitized", "text[]", (i) => i.row.sanitized],
  ["subject", "text", (i) => i.email.subject],
  ["textBody", "text", (i) => i.email.textBody],
  ["strippedText", "text", (i) => i.email.strippedText],
  ["htmlBody", "text", (i) => i.email.htmlBody],
  ["headers", "jsonb", (i) => JSON.stringify(i.email.headers)],
  ["recipient", "text", (i) => i.row.recipient],
  ["plusTag", "text", (i) => i.row.plusTag],
  ["spamVerdict", "text", (i) => i.row.spamVerdict],
  ["spamScore", "float8", (i) => i.row.spamScore],
  ["spfVerdict", "text", (i) => i.row.spfVerdict],
  ["dkimVerdict", "text", (i) => i.row.dkimVerdict],
  ["dmarcVerdict", "text", (i) => i.row.dmarcVerdict],
  ["virusVerdict", "text", (i) => i.row.virusVerdict],
  ["virusSignature", "text", (i) => i.row.virusSignature],
  ["arcVerdict", "text", (i) => i.row.arcVerdict],
  ["dmarcOverridden", "boolean", (i) => i.row.dmarcOverridden],
  ["verdictReasons", "jsonb", (i) => JSON.stringify(i.row.verdictReasons)],
  ["shieldRuleId", "text", (i) => i.row.shieldRuleId],
  ["shieldAction", "text", (i) => i.row.shieldAction],
  ["contentHash", "text", (i) => i.row.contentHash],
  ["spoolId", "text", (i) => i.row.spoolId],
  ["spoolRecipientId", "text", (i) => i.row.spoolRecipientId],
  ["receivedAt", "timestamptz", (i) => i.row.receivedAt],
  ["traceparent", "text", (i) => i.row.traceparent],
];

// Fixed parameters $1–$14 (see storeEmail), then one per email column.
const FIXED = 14;
const emailCols = EMAIL_COLUMNS.map(([c]) => `"${c}"`).join(", ");
const emailVals = EMAIL_COLUMNS.map(([, t], k) => `$${FIXED + 1 + k}::${t}`).join(", ");

/**
 * Data-modifying CTEs all run on the statement's one snapshot; each later step is gated on the
 * claim (`ok`), so a recipient another worker already moved out of `pending` writes nothing, and a
 * duplicate only changes the recipient's status. Foreign keys are checked at the end of the
 * statement, when the thread and the email exist.
 */
const STORE_SQL = `
WITH same AS (
  SELECT id FROM emails
   WHERE "accountId" = $2 AND recipient = $3 AND "messageId" = $4 AND "contentHash" = $5
     AND direction = 'inbound' AND "receivedAt" >= $6
   LIMIT 1
), claim AS (
  UPDATE spool_recipients
     SET status = CASE WHEN EXISTS (SELECT 1 FROM same) THEN 'duplicate' WHEN $7::boolean THEN 'storing' ELSE 'stored' END,
         "processedAt" = now()
   WHERE id = $1 AND status = 'pending'
  RETURNING status
), ok AS (
  SELECT 1 FROM claim WHERE status <> 'duplicate'
), parent AS (
  SELECT "threadId" FROM emails
   WHERE "accountId" = $2 AND "messageId" = ANY($8::text[]) AND cardinality($8::text[]) > 0
   ORDER BY "receivedAt" DESC LIMIT 1
), bumped AS (
  UPDATE threads SET "lastMessageAt" = $9
   WHERE id = (SELECT "threadId" FROM parent) AND EXISTS (SELECT 1 FROM ok)
  RETURNING id
), created AS (
  INSERT INTO threads (id, "accountId", subject, "lastMessageAt", "createdAt")
  SELECT $10, $2, $11, $9, $9
   WHERE NOT EXISTS (SELECT 1 FROM parent) AND EXISTS (SELECT 1 FROM ok)
  RETURNING id
), email AS (
  INSERT INTO emails (id, "threadId", ${emailCols})
  SELECT $12, COALESCE((SELECT "threadId" FROM parent), (SELECT id FROM created)), ${emailVals}
   WHERE EXISTS (SELECT 1 FROM ok)
  RETURNING id
), atts AS (
  INSERT INTO attachments (id, "emailId", index, filename, "contentType", size, "contentId", disposition, checksum, content, stored)
  SELECT a.id, (SELECT id FROM email), a.index, a.filename, a."contentType", a.size, a."contentId", a.disposition, a.checksum, NULL, false
    FROM jsonb_to_recordset($13::jsonb)
         AS a(id text, index int, filename text, "contentType" text, size int, "contentId" text, disposition text, checksum text)
   WHERE EXISTS (SELECT 1 FROM email)
), dels AS (
  INSERT INTO deliveries (id, "accountId", "emailId", "endpointId", "maxAttempts", "nextAttemptAt")
  SELECT c.id, $2, (SELECT id FROM email), e.id, e."maxAttempts", now()
    FROM jsonb_to_recordset($14::jsonb) AS c(id text, "endpointId" text)
    JOIN endpoints e ON e.id = c."endpointId" AND e."accountId" = $2
   WHERE EXISTS (SELECT 1 FROM email)
  RETURNING id, "endpointId"
)
SELECT (SELECT status FROM claim) AS claimed,
       (SELECT id FROM same) AS "sameId",
       (SELECT id FROM email) AS "emailId",
       COALESCE((SELECT array_agg(id) FROM dels), '{}') AS "deliveryIds",
       COALESCE((SELECT json_agg(json_build_object('id', d.id, 'endpointType', ep.type, 'endpointId', d."endpointId"))
                   FROM dels d JOIN endpoints ep ON ep.id = d."endpointId"), '[]'::json) AS "deliveries"`;

/**
 * Stores the Email with its thread, attachment rows (bytes later: process.ts finishStoring) and
 * Deliveries, or records the duplicate, in one transaction sent in one round trip (storeInTransaction).
 */
export async function storeEmail(pool: pg.Pool, input: StoreInput): Promise<StoreResult> {
  const [row] = await storeInTransaction(pool, [prepareStore(input)]);
  return storeResult(row);
}

/** One email's share of a store transaction: its duplicate-lock key and the store statement's parameters. */
export type PreparedStore = { dedupeKey: string; params: unknown[] };

export function prepareStore(input: StoreInput): PreparedStore {
  const { row, email } = input;
  const refs = [...new Set([email.inReplyTo, ...email.references].filter((r): r is string => Boolean(r)))];
  const attachments = email.attachments.map((a, index) => ({
    id: newId("attachment"),
    index,
    filename: a.filename,
    contentType: a.contentType,
    size: a.size,
    contentId: a.contentId,
    disposition: a.disposition,
    checksum: a.checksum,
  }));
  const deliveries = [...new Set(input.endpointIds)].map((endpointId) => ({ id: newId("delivery"), endpointId }));
  const params: unknown[] = [
    row.spoolRecipientId, // $1
    row.accountId, // $2
    row.recipient, // $3
    email.messageId, // $4
    row.contentHash, // $5
    input.duplicateSince, // $6
    attachments.length > 0, // $7
    refs, // $8
    row.receivedAt, // $9
    newId("thread"), // $10
    email.subject, // $11
    newId("email"), // $12
    JSON.stringify(attachments), // $13
    JSON.stringify(deliveries), // $14
    ...EMAIL_COLUMNS.map(([, , value]) => value(input)),
  ];
  return { dedupeKey: `${row.accountId}\n${row.recipient}\n${email.messageId}`, params };
}

/** What the store statement answered for one email, as the caller's result. */
export function storeResult(r: StoreRow | undefined): StoreResult {
  if (!r?.claimed) return { kind: "claimed-elsewhere" };
  if (r.sameId && r.claimed === "duplicate") return { kind: "duplicate", emailId: r.sameId };
  return { kind: "stored", emailId: r.emailId as string, deliveryIds: r.deliveryIds, deliveries: r.deliveries };
}

export type StoreRow = {
  claimed: string | null;
  sameId: string | null;
  emailId: string | null;
  deliveryIds: string[];
  deliveries: { id: string; endpointType: string; endpointId: string }[];
};

/**
 * The transaction in ONE round trip: BEGIN, the duplicate locks, the store statements (named:
 * parsed and planned once per connection) and COMMIT are written together on a pipelined connection
 * (node-postgres's pipeline mode, switched on for this client while they are in flight) and
 * Postgres runs them one after another as it reads them. A lock serialises the duplicate check for
 * one (account, recipient, Message-ID) across workers; the locks are a statement of their own before
 * the stores, so that each store's snapshot (READ COMMITTED: one per statement, taken when it
 * starts, after every lock was granted) sees what a lock's previous holder committed, and a store
 * sees the ones before it in the same transaction (the same message twice in one batch: the second
 * is a duplicate). Several emails (store-batch.ts) take their locks in key order, so two batches
 * never wait for each other in a circle. If any statement fails, the ones after it fail too and the
 * COMMIT ends the transaction as a ROLLBACK; the first error is thrown and the connection is not
 * reused. Answers one row per email, in order.
 */
export async function storeInTransaction(
  pool: pg.Pool,
  emails: readonly PreparedStore[],
): Promise<(StoreRow | undefined)[]> {
  // checkout: a connection that drops while they are in flight fails them, not the process.
  const { client, release } = await checkout(pool);
  const pipelined = client as pg.PoolClient & { pipeline?: boolean };
  pipelined.pipeline = true;
  const keys = [...new Set(emails.map((e) => e.dedupeKey))].sort();
  const sent = [
    client.query("BEGIN"),
    // One email: the lock statement of old (the same lock, so old and new processes exclude each
    // other); several: all of them in one statement, taken in key order.
    keys.length === 1
      ? client.query({ name: "rule-engine-dedupe-lock", text: DEDUPE_LOCK_SQL, values: keys })
      : client.query({ name: "rule-engine-dedupe-locks", text: DEDUPE_LOCKS_SQL, values: [keys] }),
    ...emails.map((e) => client.query<StoreRow>({ name: "rule-engine-store", text: STORE_SQL, values: e.params })),
    client.query("COMMIT"),
  ];
  const settled = await Promise.allSettled(sent);
  pipelined.pipeline = false;
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  release(failed ? (failed.reason as Error) : undefined);
  if (failed) throw failed.reason;
  const results = (settled as PromiseFulfilledResult<pg.QueryResult<StoreRow>>[]).map((r) => r.value);
  // A COMMIT of a transaction that failed answers ROLLBACK instead of an error.
  const commit = results[results.length - 1] as pg.QueryResult;
  if (commit.command !== "COMMIT") throw new Error(`store transaction ended with ${commit.command}`);
  return results.slice(2, 2 + emails.length).map((r) => r.rows[0]);
}

const DEDUPE_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";
// The keys come sorted and the function runs on the rows in that order: the locks are taken in key order.
const DEDUPE_LOCKS_SQL = `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0)))
  FROM (SELECT k FROM unnest($1::text[]) AS k ORDER BY k) AS sorted`;

/** The `block` step: the recipient claimed as blocked and its block record, in one statement. */
export async function recordBlock(
  db: Queryable,
  b: {
    spoolRecipientId: string;
    accountId: string;
    ruleId: string;
    ruleName: string;
    sender: string;
    recipient: string;
    subject: string;
    receivedAt: Date;
  },
): Promise<boolean> {
  const { rows } = await db.query<{ id: string }>({
    name: "rule-engine-block",
    text: `WITH claim AS (
       UPDATE spool_recipients SET status = 'blocked', "processedAt" = now()
        WHERE id = $1 AND status = 'pending'
        RETURNING id
     )
     INSERT INTO block_records (id, "accountId", "ruleId", "ruleName", sender, recipient, subject, "receivedAt")
     SELECT $2, $3, $4, $5, $6, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM claim)
     RETURNING id`,
    values: [
      b.spoolRecipientId,
      newId("block"),
      b.accountId,
      b.ruleId,
      b.ruleName,
      b.sender,
      b.recipient,
      b.subject,
      b.receivedAt,
    ],
  });
  return rows.length > 0;
}

/** A blocked or duplicate message keeps no body: drop the raw bytes once nothing still needs them. */
export async function purgeSpoolIfUnused(db: Queryable, spoolId: string): Promise<void> {
  await db.query({
    name: "rule-engine-purge",
    text: `DELETE FROM spooled_messages s
      WHERE s.id = $1
        AND NOT EXISTS (SELECT 1 FROM spool_recipients r WHERE r."spoolId" = s.id AND r.status = 'pending')
        AND NOT EXISTS (SELECT 1 FROM emails e WHERE e."spoolId" = s.id)`,
    values: [spoolId],
  });
}
