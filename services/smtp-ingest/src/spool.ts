import { monthKey } from "@mailroom/core";
import { type Column, columnList, columns, newId, type Queryable, type Row, withTransaction } from "@mailroom/db";
import { type AccountVolume, enqueueBulk, type TypedQueue } from "@mailroom/queues";
import type pg from "pg";
import type { TlsInfo } from "./received-header.ts";
import type { Route } from "./recipients.ts";
import { CLAIM_FREE_SHARD, type Claim, type ClaimRequest, claim, claimParams } from "./usage.ts";

/**
 * The message bytes: `staged` slices already in spool_chunks under `spoolId` (see receive.ts),
 * followed by `tail`. `size` and `sha256` cover the whole message as the client sent it.
 */
export type SpoolBody = { spoolId: string; staged: number; tail: Buffer; size: number; sha256: string };

/**
 * `received`: our `Received:` header (received-header.ts), stored in front of the client's bytes;
 * the columns `size` and `sha256` still describe the client's bytes alone (what the size limit
 * counted), so the stored raw is `octet_length(raw) - size` bytes of our header, then those.
 */
export type SpoolInput = {
  body: SpoolBody;
  received: Buffer;
  mailFrom: string;
  remoteIp: string | null;
  helo: string | null;
  tls: TlsInfo | null;
  routes: Route[];
  /** W3C traceparent of the transaction's span (transaction-trace.ts), null when tracing is off. */
  traceparent: string | null;
};

/** `jobId`: the `inbound` job that carries it (jobGroups). */
export type Recipient = Route & { id: string; jobId: string };

/** What an acceptance wrote: its messages, their recipients (each one the rule engine's work item), the counts. */
export type Spooled = {
  spoolIds: string[];
  recipients: { id: string; accountId: string; jobId: string }[];
  claims: Claim[];
};

/** A wake-up that could not be queued (the rows stay pending; the rule engine's sweeper queues them). */
export type SignalFailed = (err: unknown, recipients: number) => void;

/**
 * Where the `inbound` jobs go after the 250: the queue, each account's recent volume (its jobs'
 * priority: fairness between accounts, @mailroom/queues fairness.ts), and what to do when Redis
 * cannot take them.
 */
export type Signal = { queue: TypedQueue<"inbound">; volume: AccountVolume; failed: SignalFailed };

/**
 * Makes an accepted message durable: the raw bytes, one row per recipient and the usage count in one
 * Postgres transaction. The committed `pending` recipient row IS the rule engine's work item: Postgres
 * rows are the truth and Redis (kept without persistence) only says "do it now", so SMTP may answer
 * 250 as soon as the transaction has committed. The `inbound` jobs are then queued without waiting
 * (signalJobs); if that fails (Redis down, the process killed first), the rows stay pending and the
 * rule engine's sweeper queues them after SWEEP_AFTER_MS. Slices staged while DATA was streaming are
 * joined into spooled_messages.raw and deleted in that same transaction, so the message exists
 * either whole, as a spool row, or not at all. Throws OverAllotment (usage.ts) when an account's
 * allotment ran out since RCPT, and any Postgres error; nothing is written then (the caller answers
 * 452/451). Messages of concurrent sessions are grouped into one statement by accept-batch.ts, which
 * calls the two halves below.
 */
export async function spoolMessage(
  pool: pg.Pool,
  signal: Signal,
  input: SpoolInput,
  now = new Date(),
): Promise<string> {
  void signalJobs(signal, await spoolRows(pool, input, now));
  return input.body.spoolId;
}

/** Recipient rows-to-be of a message, each with its new id, grouped into jobs with each other (jobGroups). */
export const recipientsOf = (input: SpoolInput): Recipient[] =>
  jobGroups(
    input.routes.map((r) => {
      const id = newId("spoolRecipient");
      return { id, jobId: id, ...r };
    }),
  );

/** Recipients one `inbound` job carries at most (the rule engine processes them together). */
export const INBOUND_JOB_RECIPIENTS = 16;

/**
 * One `inbound` job per account among recipients written by one statement, of at most
 * INBOUND_JOB_RECIPIENTS each: every recipient's `jobId` becomes the id of the first recipient of
 * its group, which is the job's id in Redis and is stored on the row (the sweeper and the rule
 * engine find a job's recipients by it). Grouped by account so a job keeps its account's place in
 * the queue (fairness.ts in @mailroom/queues). Mutates and returns `recipients`.
 */
export function jobGroups<R extends { id: string; accountId: string; jobId: string }>(recipients: R[]): R[] {
  const open = new Map<string, { jobId: string; n: number }>();
  for (const r of recipients) {
    const group = open.get(r.accountId);
    if (group && group.n < INBOUND_JOB_RECIPIENTS) {
      r.jobId = group.jobId;
      group.n += 1;
    } else {
      r.jobId = r.id;
      open.set(r.accountId, { jobId: r.id, n: 1 });
    }
  }
  return recipients;
}

/** The Postgres half of spoolMessage: bytes, recipients and usage committed (or nothing, and it throws). */
export async function spoolRows(pool: pg.Pool, input: SpoolInput, now = new Date()): Promise<Spooled> {
  const { body } = input;
  const recipients = recipientsOf(input);
  const requests = usageRequests(recipients, monthKey(now));

  // Plain SQL on node-postgres, not Prisma: the raw bytes go out as one binary parameter instead of
  // being copied and re-encoded several times (see packages/db/src/blobs.ts).
  let claims: Claim[];
  try {
    const [single] = requests;
    const oneStatement = body.staged === 0 && requests.length === 1 && single !== undefined;
    claims =
      (oneStatement ? await acceptInOneStatement(pool, input, recipients, single, now) : undefined) ??
      (await acceptInTransaction(pool, input, recipients, requests, now, !oneStatement));
  } catch (err) {
    // Nothing was committed: the staged slices go too (if Postgres is gone, the purge in
    // staging.ts removes them later).
    if (body.staged) {
      await pool.query(`DELETE FROM spool_chunks WHERE "uploadId" = $1`, [body.spoolId]).catch(() => undefined);
    }
    throw err;
  }
  return {
    spoolIds: [body.spoolId],
    recipients: recipients.map(({ id, accountId, jobId }) => ({ id, accountId, jobId })),
    claims,
  };
}

/**
 * The Redis half, after the commit: one `inbound` job per recipient (job id = recipient id, so the
 * sweeper queueing the same row again is a no-op), all in one round trip, each at its account's
 * priority. Never rejects: a failure goes to `failed` and the rows wait for the sweeper. Not
 * awaited before the 250 (issue 13: the Redis hop was a fifth of one connection's time per message
 * and added nothing durable).
 */
export function signalJobs(signal: Signal, spooled: Spooled): Promise<void> {
  // One job per group: the first recipient's id, which every recipient of the group carries as jobId.
  const jobs = new Map<string, { accountId: string; n: number }>();
  for (const { jobId, accountId } of spooled.recipients) {
    const job = jobs.get(jobId) ?? { accountId, n: 0 };
    job.n += 1;
    jobs.set(jobId, job);
  }
  return enqueueBulk(
    signal.queue,
    "inbound",
    [...jobs].map(([jobId, { accountId, n }]) => ({
      payload: { spoolRecipientId: jobId },
      options: { jobId, priority: signal.volume.next(accountId, n) },
    })),
  ).then(
    () => undefined,
    (err: unknown) => signal.failed(err, spooled.recipients.length),
  );
}

/** One claim per account, in account order (so transactions settling several accounts lock alike). */
export function usageRequests(recipients: Recipient[], month: string): ClaimRequest[] {
  const byAccount = new Map<string, ClaimRequest>();
  for (const r of recipients) {
    const req = byAccount.get(r.accountId) ?? { accountId: r.accountId, month, n: 0, allotment: r.allotment };
    req.n += 1;
    byAccount.set(r.accountId, req);
  }
  return [...byAccount.values()].sort((a, b) => (a.accountId < b.accountId ? -1 : 1));
}

// Column lists checked against the schema (@mailroom/db rows.ts): a renamed column fails tsc.
const MESSAGE_HEAD = columns<"spooled_messages">()([
  "id",
  "mailFrom",
  "remoteIp",
  "helo",
  "tlsProtocol",
  "tlsCipher",
  "size",
  "sha256",
  "traceparent",
]);
export const MESSAGE_COLUMNS = columnList([
  ...MESSAGE_HEAD,
  "raw",
  "receivedAt",
] satisfies Column<"spooled_messages">[]);
export const RECIPIENT_COLUMNS = columnList(
  columns<"spool_recipients">()([
    "id",
    "spoolId",
    "accountId",
    "domainId",
    "addressId",
    "recipient",
    "createdAt",
    "jobId",
  ]),
);

/** Recipient rows from arrays (one statement for any number); `$1` is the spool id, `$2` the time. */
const RECIPIENTS_FROM_ARRAYS = `
  SELECT v.id, $1, v."accountId", v."domainId", v."addressId", v.recipient, $2, v."jobId"
    FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
      AS v(id, "accountId", "domainId", "addressId", recipient, "jobId")`;

const recipientArrays = (rs: Recipient[]) => [
  rs.map((r) => r.id),
  rs.map((r) => r.accountId),
  rs.map((r) => r.domainId),
  rs.map((r) => r.addressId),
  rs.map((r) => r.recipient),
  rs.map((r) => r.jobId),
];

/** The columns before `raw`, in MESSAGE_COLUMNS order, each typed as the schema's column. */
const messageHead = (input: SpoolInput): unknown[] => {
  const { body, tls } = input;
  const head: Pick<Row<"spooled_messages">, (typeof MESSAGE_HEAD)[number]> = {
    id: body.spoolId,
    mailFrom: input.mailFrom,
    remoteIp: input.remoteIp,
    helo: input.helo,
    tlsProtocol: tls?.protocol ?? null,
    tlsCipher: tls?.cipher ?? null,
    size: body.size,
    sha256: body.sha256,
    traceparent: input.traceparent,
  };
  return MESSAGE_HEAD.map((c) => head[c]);
};

/** A message held in memory as stored: our Received header, then the client's bytes. */
export const storedBytes = (input: SpoolInput): Buffer => Buffer.concat([input.received, input.body.tail]);

/** Parameters: $1–$5 the claim, $6 the spool id, $7 the time, $8–$12 and $22 the recipients, $13–$21 the rest. */
const ACCEPT_IN_ONE_STATEMENT = `
  WITH c AS (${CLAIM_FREE_SHARD}),
  m AS (INSERT INTO spooled_messages (${MESSAGE_COLUMNS})
        SELECT $6, $13, $14, $15, $16, $17, $18, $19, $20, $21, $7 FROM c RETURNING id),
  r AS (INSERT INTO spool_recipients (${RECIPIENT_COLUMNS})
        SELECT v.id, m.id, v."accountId", v."domainId", v."addressId", v.recipient, $7, v."jobId"
          FROM m, unnest($8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $22::text[])
            AS v(id, "accountId", "domainId", "addressId", recipient, "jobId"))
  SELECT shard FROM c`;

/**
 * The common case, a message held in memory for one account, in one round trip: one statement
 * (so one implicit transaction) counts it on a free usage shard and, only if that worked, inserts
 * the message and its recipients. Returns undefined, having written nothing, when there is no free
 * shard with room; the caller then takes the transaction path, which settles exactly.
 */
async function acceptInOneStatement(
  db: Queryable,
  input: SpoolInput,
  recipients: Recipient[],
  request: ClaimRequest,
  now: Date,
): Promise<Claim[] | undefined> {
  // Named: each pooled connection parses and plans it once, not for every message.
  const r = await db.query<{ shard: number }>({
    name: "ingest-accept-one",
    text: ACCEPT_IN_ONE_STATEMENT,
    values: [
      ...claimParams(request),
      input.body.spoolId,
      now,
      ...recipientArrays(recipients).slice(0, 5),
      ...messageHead(input).slice(1),
      storedBytes(input),
      recipients.map((r) => r.jobId),
    ],
  });
  const shard = r.rows[0]?.shard;
  return shard === undefined
    ? undefined
    : [{ accountId: request.accountId, month: request.month, shard, n: request.n }];
}

/**
 * Every other case: counts each account (on a free shard, or settling), then writes, in one
 * transaction. `tryFreeShards` false: the one-statement path just found no free shard.
 */
function acceptInTransaction(
  pool: pg.Pool,
  input: SpoolInput,
  recipients: Recipient[],
  requests: ClaimRequest[],
  now: Date,
  tryFreeShards: boolean,
): Promise<Claim[]> {
  const { body } = input;
  return withTransaction(pool, async (db) => {
    const claims: Claim[] = [];
    for (const req of requests) claims.push(await claim(db, req, tryFreeShards));
    if (body.staged === 0) {
      await db.query(
        `INSERT INTO spooled_messages (${MESSAGE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [...messageHead(input), storedBytes(input), now],
      );
    } else {
      // Staged slices are joined inside Postgres, so a big message never exists whole in this process.
      const joined = await db.query<{ n: number }>(
        `INSERT INTO spooled_messages (${MESSAGE_COLUMNS})
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9,
                $10::bytea || COALESCE(string_agg(data, ''::bytea ORDER BY seq), ''::bytea) || $11::bytea, $12
           FROM spool_chunks WHERE "uploadId" = $1
         RETURNING octet_length(raw) - octet_length($10::bytea) AS n`,
        [...messageHead(input), input.received, body.tail, now],
      );
      // A slice missing (purged as stale, or lost with an unlogged table in a Postgres crash) must
      // not become a shorter message: refuse, and the client retries.
      if (joined.rows[0]?.n !== body.size) {
        throw new Error(
          `staged DATA of ${body.spoolId} is incomplete (${joined.rows[0]?.n ?? 0} of ${body.size} bytes)`,
        );
      }
      await db.query(`DELETE FROM spool_chunks WHERE "uploadId" = $1`, [body.spoolId]);
    }
    await db.query(
      `INSERT INTO spool_recipients (${RECIPIENT_COLUMNS})
       ${RECIPIENTS_FROM_ARRAYS}`,
      [body.spoolId, now, ...recipientArrays(recipients)],
    );
    return claims;
  });
}
