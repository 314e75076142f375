import type { AttachmentRow, EmailRow, SpoolOrigin } from "@mailroom/core";
import { newId, type PrismaClient, poolOf } from "@mailroom/db";

/**
 * The two statements per delivery attempt — claim (with everything the request needs) and record —
 * each one round trip, and each taking many attempts at once (the webhook dispatcher coalesces the
 * claims and records of concurrent jobs, batcher.ts). Shared by the webhook dispatcher (HTTP
 * destinations) and the outbound-sender's forward worker (email destinations): one claim, one record,
 * so both keep the same guarantees (no attempt made twice under one delivery id). Prisma's nested findUnique took five round
 * trips (delivery, endpoint, email, attachments, domain), the claim one more and the record's
 * interactive transaction four (BEGIN, UPDATE, INSERT, COMMIT). They run on node-postgres directly
 * (the pool under Prisma, as blobs.ts does), as named statements: each pooled connection parses and
 * plans them once instead of for every attempt.
 */

export type LoadedDelivery = {
  id: string;
  accountId: string;
  emailId: string;
  endpointId: string;
  status: string;
  attemptCount: number;
  maxAttempts: number;
  attemptBase: number;
  nextAttemptAt: Date | null;
  createdAt: Date;
  /** The W3C traceparent of the span that stored the email (the rule engine's); null when untraced. */
  traceparent: string | null;
  endpoint: {
    type: string;
    url: string;
    headers: unknown;
    timeoutSeconds: number;
    active: boolean;
    secret: string;
    previousSecret: string | null;
    previousSecretExpiresAt: Date | null;
    /** The endpoint's circuit (webhook dispatcher): failed attempts in a row, failing since, next probe. */
    consecutiveFailures: number;
    failingSince: Date | null;
    probeAt: Date | null;
  };
  email: EmailRow & { recipient: string | null; attachments: AttachmentRow[]; domain: { domain: string } | null };
};

/**
 * A delivery claimed for its next attempt: `nextAttemptAt` is the lease, `previousNextAttemptAt` what
 * it replaced. `busy`: its endpoint was one of `busyEndpoints`, so the row was left as it was.
 */
export type ClaimedDelivery = LoadedDelivery & {
  nextAttemptAt: Date;
  previousNextAttemptAt: Date | null;
  busy: boolean;
};

type Row = Omit<LoadedDelivery, "endpoint" | "email" | "traceparent"> & {
  e_traceparent: string | null;
  ep_type: string;
  ep_url: string;
  ep_headers: unknown;
  ep_timeoutSeconds: number;
  ep_active: boolean;
  ep_secret: string;
  ep_previousSecret: string | null;
  ep_previousSecretExpiresAt: Date | null;
  ep_consecutiveFailures: number;
  ep_failingSince: Date | null;
  ep_probeAt: Date | null;
  domain: string | null;
  attachments: AttachmentRow[];
} & { [K in keyof Omit<EmailRow, "spool"> as `e_${K & string}`]: EmailRow[K] } & { e_recipient: string | null } & {
  [K in keyof SpoolOrigin as `s_${K & string}`]: SpoolOrigin[K];
};

/** The delivery `d` (a table or a CTE) with its endpoint, email, attachments and domain. */
const selectLoaded = (from: string, extra = "", where = `WHERE d."id" = $1`) => `
    SELECT d."id", d."accountId", d."emailId", d."endpointId", d."status", d."attemptCount", d."maxAttempts",
           d."attemptBase", d."nextAttemptAt", d."createdAt",
           ep."type" AS "ep_type", ep."url" AS "ep_url", ep."headers" AS "ep_headers",
           ep."timeoutSeconds" AS "ep_timeoutSeconds", ep."active" AS "ep_active", ep."secret" AS "ep_secret",
           ep."previousSecret" AS "ep_previousSecret", ep."previousSecretExpiresAt" AS "ep_previousSecretExpiresAt",
           ep."consecutiveFailures" AS "ep_consecutiveFailures", ep."failingSince" AS "ep_failingSince", ep."probeAt" AS "ep_probeAt",
           e."id" AS "e_id", e."direction" AS "e_direction", e."threadId" AS "e_threadId",
           e."messageId" AS "e_messageId", e."inReplyTo" AS "e_inReplyTo", e."fromAddress" AS "e_fromAddress",
           e."toAddresses" AS "e_toAddresses", e."ccAddresses" AS "e_ccAddresses", e."subject" AS "e_subject",
           e."textBody" AS "e_textBody", e."strippedText" AS "e_strippedText", e."htmlBody" AS "e_htmlBody",
           e."spamVerdict" AS "e_spamVerdict",
           e."spfVerdict" AS "e_spfVerdict", e."dkimVerdict" AS "e_dkimVerdict", e."dmarcVerdict" AS "e_dmarcVerdict",
           e."dmarcOverridden" AS "e_dmarcOverridden", e."arcVerdict" AS "e_arcVerdict", e."virusVerdict" AS "e_virusVerdict",
           e."virusSignature" AS "e_virusSignature", e."verdictReasons" AS "e_verdictReasons",
           e."receivedAt" AS "e_receivedAt", e."sanitized" AS "e_sanitized", e."sendStatus" AS "e_sendStatus",
           e."sendAttempts" AS "e_sendAttempts", e."sendLastReply" AS "e_sendLastReply", e."sentAt" AS "e_sentAt",
           e."recipient" AS "e_recipient", e."traceparent" AS "e_traceparent", dom."domain" AS "domain",
           s."remoteIp" AS "s_remoteIp", s."helo" AS "s_helo", s."tlsProtocol" AS "s_tlsProtocol",
           s."tlsCipher" AS "s_tlsCipher"${extra},
           coalesce((SELECT json_agg(json_build_object('id', a."id", 'inRow', a."content" IS NOT NULL, 'index', a."index", 'filename', a."filename",
                                     'contentType', a."contentType", 'size', a."size", 'stored', a."stored"))
                       FROM "attachments" a WHERE a."emailId" = e."id"), '[]'::json) AS "attachments"
      FROM ${from} d
      JOIN "endpoints" ep ON ep."id" = d."endpointId"
      JOIN "emails" e ON e."id" = d."emailId"
      LEFT JOIN "domains" dom ON dom."id" = e."domainId"
      LEFT JOIN "spooled_messages" s ON s."id" = e."spoolId"
     ${where}`;

/** The delivery as it is, whatever its state: to tell why it could not be claimed. */
export async function loadDelivery(prisma: PrismaClient, id: string): Promise<LoadedDelivery | null> {
  const { rows } = await poolOf(prisma).query<Row>({
    name: "delivery-load",
    text: selectLoaded(`"deliveries"`),
    values: [id],
  });
  const r = rows[0];
  return r ? fromRow(r) : null;
}

/** One attempt to claim: the delivery, its expected attempt count (optional) and how due it must be. */
export type ClaimRequest = { id: string; expectedCount?: number; dueBy: Date; now: Date };

/** A requested delivery that may be claimed now (`req` a row of the requests). */
const CLAIMABLE = `d."status" IN ('pending', 'retrying') AND (req."expected" IS NULL OR d."attemptCount" = req."expected")
         AND ep."active" AND (ep."type" = 'email') = $7::boolean AND (d."nextAttemptAt" IS NULL OR d."nextAttemptAt" <= req."dueBy")`;
/**
 * `due`: the claimable requests of endpoints with a slot free, locked in id order and leased by
 * `claimed`; `busy`: those of the busy endpoints, read as they are (neither locked nor written).
 */
const CLAIM = `
    WITH req AS (
      SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::timestamptz[]) AS r("id", "expected", "dueBy", "now")
    ), due AS (
      SELECT d."id", d."nextAttemptAt", ep."timeoutSeconds", req."now"
        FROM req
        JOIN "deliveries" d ON d."id" = req."id"
        JOIN "endpoints" ep ON ep."id" = d."endpointId"
       WHERE ${CLAIMABLE} AND NOT d."endpointId" = ANY($6::text[])
       ORDER BY d."id"
         FOR UPDATE OF d
    ), claimed AS (
      UPDATE "deliveries" d
         SET "nextAttemptAt" = due."now" + coalesce($8::int, due."timeoutSeconds" * 1000 + $5::int) * interval '1 millisecond',
             "updatedAt" = now()
        FROM due
       WHERE d."id" = due."id"
      RETURNING d.*, due."nextAttemptAt" AS "previousNextAttemptAt", false AS "busy"
    ), busy AS (
      SELECT d.*, d."nextAttemptAt" AS "previousNextAttemptAt", true AS "busy"
        FROM req
        JOIN "deliveries" d ON d."id" = req."id"
        JOIN "endpoints" ep ON ep."id" = d."endpointId"
       WHERE ${CLAIMABLE} AND d."endpointId" = ANY($6::text[])
    )
    ${selectLoaded(`(SELECT * FROM claimed UNION ALL SELECT * FROM busy)`, `, d."previousNextAttemptAt", d."busy"`, "")}`;
/** How a claim is taken: which destinations, and how long the lease lasts. */
export type ClaimOptions = {
  /** The lease: the endpoint's timeout plus this (HTTP destinations). */
  leaseMarginMs: number;
  /** A fixed lease instead (email destinations: the relay's timeouts, not the endpoint's, bound them). */
  leaseMs?: number;
  /** Email destinations (the forward worker) instead of HTTP ones (webhook, Slack, Discord). */
  email?: boolean;
  busyEndpoints?: string[];
};

/**
 * Claims each delivery's next attempt and loads it, all in one statement: only if it is pending or
 * retrying, on an active endpoint of the kind asked for (HTTP, or email with `email`), due by `dueBy`, and (with `expectedCount`) still at that
 * attempt count. nextAttemptAt moves to a lease of the endpoint's timeout plus `leaseMarginMs` (or
 * `leaseMs`) from `now`; the row locks (FOR UPDATE, taken in id order so that two claimers cannot deadlock, and
 * re-checked after a concurrent update) make two claimers of one attempt exclusive. Null for a
 * request not claimable now (`loadDelivery` says why). A delivery for one of `busyEndpoints` (no slot
 * free in this process) comes back with `busy` and is neither locked nor written (no row version, no
 * WAL for a job that only learns its endpoint): the job learns it in the same round trip, with
 * nothing to give back. The ids must be distinct (the batcher's key).
 */
export async function claimDeliveries(
  prisma: PrismaClient,
  reqs: ClaimRequest[],
  opts: ClaimOptions,
): Promise<(ClaimedDelivery | null)[]> {
  const { rows } = await poolOf(prisma).query<Row & { previousNextAttemptAt: Date | null; busy: boolean }>({
    name: "delivery-claim",
    text: CLAIM,
    values: [
      reqs.map((r) => r.id),
      reqs.map((r) => r.expectedCount ?? null),
      reqs.map((r) => r.dueBy),
      reqs.map((r) => r.now),
      opts.leaseMarginMs,
      opts.busyEndpoints ?? [],
      opts.email === true,
      opts.leaseMs ?? null,
    ],
  });
  const byId = new Map(rows.map((r) => [r.id, r]));
  return reqs.map(({ id }) => {
    const r = byId.get(id);
    if (!r) return null;
    byId.delete(id); // a repeated id gets nothing: only one caller holds the claim
    const claimed = {
      nextAttemptAt: r.nextAttemptAt as Date,
      previousNextAttemptAt: r.previousNextAttemptAt,
      busy: r.busy,
    };
    return { ...fromRow(r), ...claimed };
  });
}

/** One delivery's claim (claimDeliveries). */
export async function claimDelivery(
  prisma: PrismaClient,
  id: string,
  opts: Omit<ClaimRequest, "id"> & ClaimOptions,
): Promise<ClaimedDelivery | null> {
  const [claimed] = await claimDeliveries(prisma, [{ ...opts, id }], opts);
  return claimed ?? null;
}

/**
 * Gives a claim back unused (the endpoint had no free slot): nextAttemptAt returns to what it was,
 * if the row still holds this claim's lease. A claim not given back (crash, Postgres away) only
 * holds the attempt until its lease ends; then the job or the sweeper makes it.
 */
export async function unclaimDelivery(prisma: PrismaClient, d: ClaimedDelivery): Promise<void> {
  await poolOf(prisma).query({
    name: "delivery-unclaim",
    text: `UPDATE "deliveries" SET "nextAttemptAt" = $1, "updatedAt" = now()
            WHERE "id" = $2 AND "attemptCount" = $3 AND "status" IN ('pending', 'retrying') AND "nextAttemptAt" = $4`,
    values: [d.previousNextAttemptAt, d.id, d.attemptCount, d.nextAttemptAt],
  });
}

function fromRow(r: Row): LoadedDelivery {
  return {
    id: r.id,
    accountId: r.accountId,
    emailId: r.emailId,
    endpointId: r.endpointId,
    status: r.status,
    attemptCount: r.attemptCount,
    maxAttempts: r.maxAttempts,
    attemptBase: r.attemptBase,
    nextAttemptAt: r.nextAttemptAt,
    createdAt: r.createdAt,
    traceparent: r.e_traceparent,
    endpoint: {
      type: r.ep_type,
      url: r.ep_url,
      headers: r.ep_headers,
      timeoutSeconds: r.ep_timeoutSeconds,
      active: r.ep_active,
      secret: r.ep_secret,
      previousSecret: r.ep_previousSecret,
      previousSecretExpiresAt: r.ep_previousSecretExpiresAt,
      consecutiveFailures: r.ep_consecutiveFailures,
      failingSince: r.ep_failingSince,
      probeAt: r.ep_probeAt,
    },
    email: emailOfRow(r),
  };
}

/** The email columns (`e_*`, `s_*`) of a loaded row, as emailView reads them. */
function emailOfRow(r: Row): LoadedDelivery["email"] {
  return {
    id: r.e_id,
    direction: r.e_direction,
    threadId: r.e_threadId,
    messageId: r.e_messageId,
    inReplyTo: r.e_inReplyTo,
    fromAddress: r.e_fromAddress,
    toAddresses: r.e_toAddresses,
    ccAddresses: r.e_ccAddresses,
    subject: r.e_subject,
    textBody: r.e_textBody,
    strippedText: r.e_strippedText,
    htmlBody: r.e_htmlBody,
    spamVerdict: r.e_spamVerdict,
    spfVerdict: r.e_spfVerdict,
    dkimVerdict: r.e_dkimVerdict,
    dmarcVerdict: r.e_dmarcVerdict,
    dmarcOverridden: r.e_dmarcOverridden,
    arcVerdict: r.e_arcVerdict,
    virusVerdict: r.e_virusVerdict,
    virusSignature: r.e_virusSignature,
    verdictReasons: r.e_verdictReasons,
    receivedAt: r.e_receivedAt,
    sanitized: r.e_sanitized ?? [],
    sendStatus: r.e_sendStatus ?? null,
    sendAttempts: r.e_sendAttempts ?? 0,
    sendLastReply: r.e_sendLastReply ?? null,
    sentAt: r.e_sentAt ?? null,
    recipient: r.e_recipient,
    spool: {
      remoteIp: r.s_remoteIp,
      helo: r.s_helo,
      tlsProtocol: r.s_tlsProtocol,
      tlsCipher: r.s_tlsCipher,
    },
    attachments: r.attachments,
    domain: r.domain === null ? null : { domain: r.domain },
  };
}

export type AttemptRecord = {
  deliveryId: string;
  /** The attempt count the row must still have (the claim's). */
  previousCount: number;
  attempt: number;
  status: string;
  nextAttemptAt: Date | null;
  statusCode: number | null;
  error: string | null;
  deliveredAt: Date | null;
  durationMs: number;
  responseBody: string;
  startedAt: Date;
  finishedAt: Date;
};

const RECORD = `
    WITH r AS (
      SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::timestamptz[], $6::int[], $7::text[],
                           $8::timestamptz[], $9::text[], $10::int[], $11::text[], $12::timestamptz[], $13::timestamptz[])
                 AS r("deliveryId", "previousCount", "attempt", "status", "nextAttemptAt", "statusCode", "error",
                      "deliveredAt", "attemptId", "durationMs", "responseBody", "startedAt", "finishedAt")
    ), moved AS (
      UPDATE "deliveries" d
         SET "attemptCount" = r."attempt", "status" = r."status", "nextAttemptAt" = r."nextAttemptAt",
             "lastStatusCode" = r."statusCode", "lastError" = r."error", "deliveredAt" = r."deliveredAt", "updatedAt" = now()
        FROM r
       WHERE d."id" = r."deliveryId" AND d."attemptCount" = r."previousCount" AND d."status" IN ('pending', 'retrying')
      RETURNING r.*
    )
    INSERT INTO "delivery_attempts" ("id", "deliveryId", "number", "statusCode", "durationMs", "error", "responseBody",
                                     "startedAt", "finishedAt")
    SELECT "attemptId", "deliveryId", "attempt", "statusCode", "durationMs", "error", "responseBody", "startedAt", "finishedAt"
      FROM moved
    RETURNING "deliveryId"`;

/**
 * Records made attempts: each Delivery row moves on and its DeliveryAttempt is inserted, all in one
 * statement (a data-modifying CTE is atomic), each only if no other worker recorded that attempt
 * first (then false for it). The delivery ids must be distinct (the batcher's key).
 */
export async function recordAttempts(prisma: PrismaClient, as: AttemptRecord[]): Promise<boolean[]> {
  const col = <K extends keyof AttemptRecord>(k: K) => as.map((a) => a[k]);
  const { rows } = await poolOf(prisma).query<{ deliveryId: string }>({
    name: "delivery-record",
    text: RECORD,
    values: [
      col("deliveryId"),
      col("previousCount"),
      col("attempt"),
      col("status"),
      col("nextAttemptAt"),
      col("statusCode"),
      col("error"),
      col("deliveredAt"),
      as.map(() => newId("deliveryAttempt")),
      col("durationMs"),
      col("responseBody"),
      col("startedAt"),
      col("finishedAt"),
    ],
  });
  const recorded = new Set(rows.map((r) => r.deliveryId));
  return as.map((a) => recorded.has(a.deliveryId));
}

/** One made attempt's record (recordAttempts). */
export async function recordAttempt(prisma: PrismaClient, a: AttemptRecord): Promise<boolean> {
  const [recorded] = await recordAttempts(prisma, [a]);
  return recorded === true;
}
