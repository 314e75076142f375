/**
 * Is this failure about the world (Postgres or Redis unreachable, overloaded, misconfigured, the
 * engine shutting down) rather than about the message? Only the second kind counts against a
 * message's processing budget (attempts.ts): an outage must never turn good mail into
 * PROCESSING_FAILED, it only delays it. When unsure the answer is "the message": an error we do not
 * recognise as an outage costs one try of five, and the message is still stored in the end.
 */

/**
 * Prisma's own codes for "could not talk to the database" (P1xxx), pool timeout and write
 * conflicts. Not P2028 (transaction expired): a message whose store always outlasts the transaction
 * timeout is the message's problem, and must not be retried for ever.
 */
const PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1011", "P1017", "P2024", "P2034"]);

/** @prisma/adapter-pg error kinds that describe the connection or the deployment, not the data. */
const ADAPTER_KINDS = new Set([
  "DatabaseNotReachable",
  "ConnectionClosed",
  "SocketTimeout",
  "TlsConnectionError",
  "TooManyConnections",
  "TransactionWriteConflict",
  "AuthenticationFailed",
  "DatabaseAccessDenied",
  "DatabaseDoesNotExist",
  "TableDoesNotExist",
  "ColumnNotFound",
]);

/** Socket-level codes (node-postgres, ioredis). */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs: 08 connection exception, 53 insufficient resources (too many connections, disk full,
 * out of memory), 57P01-57P05 admin / crash shutdown, cannot connect now (starting up, in recovery),
 * database dropped, idle session timeout, 58 system (I/O) error, 40001/40P01/40003 serialization
 * failure / deadlock / completion unknown, 55P03 lock not available, 28 auth, 3D000 no database,
 * 42P01/42703 schema not migrated, 42501 privileges (the deployment's grants).
 * Also what an overloaded or failing-over server answers to any statement: 57014 canceled (a
 * statement_timeout, or an operator's cancel), 25006 a write in a read-only transaction (a standby,
 * or default_transaction_read_only while a failover is under way), 25P03 idle-in-transaction timeout.
 * A message whose store always outlasts statement_timeout is thereby retried (by the sweeper, with a
 * fresh budget) instead of stored as PROCESSING_FAILED: the timeout is the operator's setting, and
 * raising it stores the message; a PROCESSING_FAILED copy would not be undone.
 */
const transientSqlState = (code: string): boolean =>
  /^(08|53|58|28)/.test(code) ||
  /^57P0[1-5]$/.test(code) ||
  ["57014", "25006", "25P03", "40001", "40P01", "40003", "55P03", "3D000", "42P01", "42703", "42501"].includes(code);

const MESSAGES =
  /Can't reach database|Connection terminated|connection (?:is )?closed|Connection is closed|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end|Query read timeout|while recovery is in progress|Stream isn't writeable|MaxRetriesPerRequest|Reached the max retries per request|Command timed out|parser closed/i;

export function isDependencyOutage(err: unknown): boolean {
  const seen = new Set<unknown>();
  const visit = (e: unknown, depth: number): boolean => {
    if (!e || typeof e !== "object" || seen.has(e) || depth > 6) return false;
    seen.add(e);
    const o = e as {
      code?: unknown;
      kind?: unknown;
      originalCode?: unknown;
      message?: unknown;
      cause?: unknown;
      meta?: { driverAdapterError?: unknown };
    };
    if (typeof o.code === "string") {
      if (PRISMA_CODES.has(o.code) || SOCKET_CODES.has(o.code)) return true;
      if (/^[0-9A-Z]{5}$/.test(o.code) && transientSqlState(o.code)) return true;
    }
    if (typeof o.kind === "string" && ADAPTER_KINDS.has(o.kind)) return true;
    if (typeof o.originalCode === "string" && transientSqlState(o.originalCode)) return true;
    if (typeof o.message === "string" && MESSAGES.test(o.message)) return true;
    return visit(o.cause, depth + 1) || visit(o.meta?.driverAdapterError, depth + 1);
  };
  return visit(err, 0);
}
