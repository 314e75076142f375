/**
 * The `load` step of processRecipient: everything processing needs to know about one spooled
 * recipient, read in ONE statement (issue 13: the ~20 statements per email one after another were
 * a third of its cost). It replaces the try counter's UPDATE, the recipient + spool reads, the
 * account/domain/address existence checks, the shield-rule read and the destination lookups.
 */
import type { Condition, RuleAction, RuleForEval } from "@mailroom/core";
import { columnList, columns, type Queryable, type Row as TableRow } from "@mailroom/db";
import pg from "pg";

export type LoadedRecipient = {
  id: string;
  spoolId: string;
  accountId: string;
  domainId: string;
  addressId: string | null;
  recipient: string;
  status: string;
  /** Tries counted so far including this one; null when no try was counted (not pending, or not asked). */
  tries: number | null;
  /**
   * `sha256`: of the bytes the client sent (the stored raw has our Received header in front);
   * `traceparent`: the SMTP transaction's span, which processing hangs under (null: untraced).
   */
  spool: {
    mailFrom: string;
    remoteIp: string | null;
    helo: string | null;
    sha256: string;
    receivedAt: Date;
    traceparent: string | null;
  };
  /** Bytes of the raw message (0 when they are gone). */
  size: number;
  /**
   * The raw message itself when it was asked for (`rawUpTo`), the recipient is pending and the
   * message is that small, in a SharedArrayBuffer (the parser thread reads it without a copy);
   * otherwise null, and the byte store reads it (process.ts).
   */
  raw: Buffer | null;
  accountExists: boolean;
  domainExists: boolean;
  /** The address row (null when the recipient has none or it was deleted since). */
  address: { localPart: string; endpointId: string | null } | null;
  /** The domain's catch-all endpoint (null when none or the domain is gone). */
  catchAllEndpointId: string | null;
  /** The account's enabled shield rules in priority order. */
  rules: RuleForEval[];
};

// The columns read as they are, checked against the schema (a renamed column fails tsc).
const RECIPIENT = columns<"spool_recipients">()([
  "id",
  "spoolId",
  "accountId",
  "domainId",
  "addressId",
  "recipient",
  "status",
]);
const MESSAGE = columns<"spooled_messages">()(["mailFrom", "remoteIp", "helo", "sha256", "receivedAt", "traceparent"]);

type Row = Pick<TableRow<"spool_recipients">, (typeof RECIPIENT)[number]> &
  Pick<TableRow<"spooled_messages">, (typeof MESSAGE)[number]> & {
    size: number | null;
    raw: Buffer | null;
    tries: number | null;
    accountExists: boolean;
    domainExists: boolean;
    catchAllEndpointId: string | null;
    addressFound: boolean;
    localPart: string | null;
    addressEndpointId: string | null;
    rules: (Omit<RuleForEval, "action" | "conditions"> & { action: string; conditions: unknown })[];
  };

/**
 * The load statement for the recipients that match `which` (a condition, on the table alias it is
 * given, with $1); `rawIf`: when a pending recipient's raw bytes come along.
 */
const loadSql = (which: (t: string) => string, rawIf: string) => `WITH try AS (
       UPDATE spool_recipients SET attempts = attempts + 1
        WHERE ${which("spool_recipients")} AND status = 'pending' AND $2::boolean
        RETURNING id, attempts
     )
     SELECT ${columnList(RECIPIENT, "r")},
            (SELECT attempts FROM try WHERE try.id = r.id) AS tries,
            ${columnList(MESSAGE, "s")}, octet_length(s.raw) AS size,
            CASE WHEN r.status = 'pending' AND ${rawIf} THEN s.raw END AS raw,
            acc.id IS NOT NULL AS "accountExists",
            d.id IS NOT NULL AS "domainExists",
            ad.id IS NOT NULL AS "addressFound", ad."localPart", ad."endpointId" AS "addressEndpointId",
            d."catchAllEndpointId",
            COALESCE((
              SELECT json_agg(json_build_object(
                       'id', sr.id, 'name', sr.name, 'action', sr.action, 'priority', sr.priority,
                       'enabled', sr.enabled, 'domainId', sr."domainId", 'addressId', sr."addressId",
                       'conditions', sr.conditions, 'endpointIds', sr."endpointIds")
                     ORDER BY sr.priority)
                FROM shield_rules sr
               WHERE sr."accountId" = r."accountId" AND sr.enabled
            ), '[]'::json) AS rules
       FROM spool_recipients r
       JOIN spooled_messages s ON s.id = r."spoolId"
       LEFT JOIN accounts acc ON acc.id = r."accountId"
       LEFT JOIN domains d ON d.id = r."domainId"
       LEFT JOIN addresses ad ON ad.id = r."addressId"
      WHERE ${which("r")}`;

/** One recipient by id; its raw bytes when the message is at most $3 bytes. */
const LOAD_SQL = loadSql((t) => `${t}.id = $1`, "octet_length(s.raw) <= $3");

/**
 * Every recipient of one `inbound` job: the one whose id the job carries and those whose jobId it
 * is (the ingest's job groups). Raw bytes of messages up to $3 bytes while the group's running
 * total stays within $4 (the rest are read by the byte store under the memory budget).
 */
const LOAD_JOB_SQL = loadSql(
  (t) => `(${t}.id = $1 OR ${t}."jobId" = $1)`,
  `octet_length(s.raw) <= $3 AND sum(octet_length(s.raw)) OVER (ORDER BY r.id) <= $4`,
);

/** bytea arrives as `\x<hex>` (text format); decoded straight into shared memory, without a second copy. */
const RAW_INTO_SHARED_MEMORY = {
  getTypeParser: (oid: number, format?: string) =>
    oid === BYTEA_OID ? sharedBytes : pg.types.getTypeParser(oid, format as "text"),
};
const BYTEA_OID = 17;

function sharedBytes(value: string): Buffer {
  const out = Buffer.from(new SharedArrayBuffer((value.length - 2) / 2));
  out.write(value.slice(2), "hex");
  return out;
}

/**
 * `countTry`: count a processing try (attempts.ts) in the same statement, only if the recipient is
 * still pending. The UPDATE in the CTE commits with the statement, before any processing, so a
 * message that kills the process is counted as before. `rawUpTo`: also return the raw bytes of a
 * pending recipient's message of at most this many bytes (issue 13: one statement less per email;
 * bigger ones are read once the memory budget admits them). Null when the recipient is not spooled.
 */
export async function loadRecipient(
  db: Queryable,
  id: string,
  opts: { countTry?: boolean; rawUpTo?: number } = {},
): Promise<LoadedRecipient | null> {
  // Named: each pooled connection parses and plans it once, not for every email.
  const { rows } = await db.query<Row>({
    name: "rule-engine-load",
    text: LOAD_SQL,
    values: [id, opts.countTry === true, opts.rawUpTo ?? -1],
    types: RAW_INTO_SHARED_MEMORY,
  } as pg.QueryConfig);
  const r = rows[0];
  return r ? loaded(r) : null;
}

/**
 * loadRecipient for every recipient the `inbound` job `jobId` carries, in one statement (empty
 * when none is spooled). `rawTotal`: at most this many raw bytes come with the statement for the
 * whole job.
 */
export async function loadJob(
  db: Queryable,
  jobId: string,
  opts: { countTry?: boolean; rawUpTo?: number; rawTotal?: number } = {},
): Promise<LoadedRecipient[]> {
  const { rows } = await db.query<Row>({
    name: "rule-engine-load-job",
    text: LOAD_JOB_SQL,
    values: [jobId, opts.countTry === true, opts.rawUpTo ?? -1, opts.rawTotal ?? -1],
    types: RAW_INTO_SHARED_MEMORY,
  } as pg.QueryConfig);
  return rows.map(loaded);
}

function loaded(r: Row): LoadedRecipient {
  return {
    id: r.id,
    spoolId: r.spoolId,
    accountId: r.accountId,
    domainId: r.domainId,
    addressId: r.addressId,
    recipient: r.recipient,
    status: r.status,
    tries: r.tries,
    spool: {
      mailFrom: r.mailFrom,
      remoteIp: r.remoteIp,
      helo: r.helo,
      sha256: r.sha256,
      receivedAt: r.receivedAt,
      traceparent: r.traceparent,
    },
    size: r.size ?? 0,
    raw: r.raw,
    accountExists: r.accountExists,
    domainExists: r.domainExists,
    address: r.addressFound ? { localPart: r.localPart as string, endpointId: r.addressEndpointId } : null,
    catchAllEndpointId: r.catchAllEndpointId,
    // Conditions were validated by the API on the way in; the evaluator never matches a malformed one.
    rules: r.rules.map((x) => ({ ...x, action: x.action as RuleAction, conditions: x.conditions as Condition[] })),
  };
}

/** The address's own destination (or the domain's catch-all) when no rule routes the message. */
export function defaultEndpointIds(r: LoadedRecipient): string[] {
  const id = r.addressId ? r.address?.endpointId : r.catchAllEndpointId;
  return id ? [id] : [];
}
