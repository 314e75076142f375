import type pg from "pg";
import { checkout } from "./pool.ts";

/**
 * Large bytea values (raw MIME, attachment bytes) go around Prisma. Prisma's query path copies and
 * re-encodes binary values several times (measured: ~12× the value's size in peak memory for a
 * 34 MB write, ~9× for a read); node-postgres sends a Buffer as one binary parameter, and reading in
 * slices into one buffer of the known size keeps a 25 MB attachment in memory once, plus a
 * slice. Table and column names come from the fixed unions below, never from input.
 */
export type BlobColumn = { table: "spooled_messages"; column: "raw" } | { table: "attachments"; column: "content" };

const SLICE = 2 * 1024 * 1024;

export type Queryable = Pick<pg.Pool, "query"> | Pick<pg.PoolClient, "query">;

/** Reads the column's value for row `id` into one Buffer; null when the row or value is missing. */
export async function readBytea(
  db: Queryable,
  where: BlobColumn,
  id: string,
  opts: { shared?: boolean } = {},
): Promise<Buffer | null> {
  const { table, column } = where;
  // Text format (node-postgres decodes every row of a connection made for text as UTF-8, so binary
  // results are not an option): bytea arrives as `\x<hex>`, decoded here slice by slice, so the
  // hex string never exceeds twice a slice. The first slice comes with the size, so a value of up
  // to one slice (almost every message) is one statement.
  const hex = { getTypeParser: (oid: number) => (oid === BYTEA_OID ? hexBytes : Number) };
  const first = await db.query<{ n: number | null; part: Buffer | null }>({
    text: `SELECT octet_length("${column}") AS n, substring("${column}" FROM 1 FOR $2) AS part FROM "${table}" WHERE id = $1`,
    values: [id, SLICE],
    types: hex,
  } as unknown as pg.QueryConfig);
  const size = first.rows[0]?.n;
  if (size === undefined || size === null) return null;
  // A SharedArrayBuffer can be handed to a worker thread without a copy.
  const out = opts.shared ? Buffer.from(new SharedArrayBuffer(size)) : Buffer.allocUnsafe(size);
  for (let offset = 0; offset < size; offset += SLICE) {
    const r =
      offset === 0
        ? first
        : await db.query<{ part: Buffer | null }>({
            text: `SELECT substring("${column}" FROM $1 FOR $2) AS part FROM "${table}" WHERE id = $3`,
            values: [offset + 1, SLICE, id],
            types: hex,
          } as unknown as pg.QueryConfig);
    const part = r.rows[0]?.part;
    if (!part || part.length !== Math.min(SLICE, size - offset)) {
      throw new Error(`${table}.${column} of ${id} changed while it was being read`);
    }
    part.copy(out, offset);
  }
  return out;
}

const BYTEA_OID = 17;
const hexBytes = (value: string): Buffer => Buffer.from(value.slice(2), "hex");

/** Runs `fn` in one transaction on one pooled connection; a connection that broke is closed (pool.ts). */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const { client, release } = await checkout(pool);
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    // A connection that cannot even roll back is in no state to be reused.
    await client.query("ROLLBACK").catch((rollback: Error) => {
      broken = rollback;
    });
    throw err;
  } finally {
    release(broken);
  }
}
