import pg from "pg";

/**
 * node-postgres reports a connection that breaks (Postgres restarted, a failover, a proxy or the
 * network dropping it) as an `'error'` event: on the pool for an idle connection, on the client for
 * one checked out. An `'error'` event nobody listens to is thrown, and the process exits. So every
 * pool and client here has a listener for its whole life, and a broken connection becomes a failed
 * query (SMTP 451, a retried job, a retried pass), never a process exit.
 */

export type PoolOptions = {
  /** Pool size; each service process holds one pool. */
  max?: number;
  /** Fail a connection attempt after this long, so a dead Postgres fails fast (SMTP 451, HTTP 503). */
  connectionTimeoutMillis?: number;
  /**
   * An idle connection broke. The pool has already dropped it and the next query connects again,
   * so this is for the log only: it is the one outage sign of a process with nothing to do.
   */
  onIdleError?: (err: Error) => void;
};

/** A node-postgres pool with its `'error'` listener from the moment it exists. */
export function createPool(databaseUrl: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5_000,
  });
  pool.on("error", (err) => options.onIdleError?.(err));
  return pool;
}

/** A connection checked out of a pool and held across several statements (a transaction, a session lock). */
export type Checkout = {
  client: pg.PoolClient;
  /** The error that broke the connection while it was held, if it broke. */
  lost(): Error | undefined;
  /**
   * Back to the pool; closed instead (`release(err)`) when it broke, or when `err` says its state
   * is unknown (a failed pipelined transaction, a ROLLBACK that failed). Once.
   */
  release(err?: Error): void;
};

/** pool.connect() with an `'error'` listener on the connection for as long as it is held. */
export async function checkout(pool: pg.Pool): Promise<Checkout> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (err: Error) => {
    lost ??= err;
  };
  client.on("error", onError);
  return {
    client,
    lost: () => lost,
    release(err) {
      // The pool puts its own listener back in release(), in the same tick: no gap without one.
      client.removeListener("error", onError);
      client.release(lost ?? err);
    },
  };
}

/** A connection of its own (migrations, admin statements), connected, with its listener; the caller ends it. */
export async function connectClient(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl });
  // A drop fails the statement in flight, which the caller sees; the event itself needs only a listener.
  client.on("error", () => undefined);
  await client.connect();
  return client;
}
