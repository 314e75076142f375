import { columnList, columns, type LeftJoined, monthlyReceivedSql, type Queryable, type Row } from "@mailroom/db";

/** What RCPT asks: a domain, the local parts to look for (the address, and without its +tag), the month. */
export type LookupKey = { domain: string; candidates: string[]; month: string };

// Columns read as they are, checked against the schema (a renamed column fails tsc).
const DOMAIN = columns<"domains">()(["accountId", "status", "catchAllEnabled"]);
const ADDRESS = columns<"addresses">()(["localPart", "active"]);

/** The domain, its account's plan and usage, and one row per candidate address found (or one without). */
export type LookupRow = { domainId: string } & Pick<Row<"domains">, (typeof DOMAIN)[number]> &
  Pick<Row<"accounts">, "plan"> & { used: string; addressId: string | null } & LeftJoined<
    Pick<Row<"addresses">, (typeof ADDRESS)[number]>
  >;

export type Lookup = (key: LookupKey) => Promise<LookupRow[]>;

const COLUMNS = (month: string) => `
  d.id AS "domainId", ${columnList(DOMAIN, "d")}, acc.plan,
  ${monthlyReceivedSql('d."accountId"', month)} AS used,
  a.id AS "addressId", ${columnList(ADDRESS, "a")}`;

/** Everything RCPT needs for one recipient in one query (it was four). */
const LOOKUP_ONE = `
  SELECT ${COLUMNS("$3")}
    FROM domains d
    JOIN accounts acc ON acc.id = d."accountId"
    LEFT JOIN addresses a ON a."domainId" = d.id AND a."localPart" = ANY($2::text[])
   WHERE d.domain = $1`;

/** The same for many recipients: `i` says whose row it is (1-based, in the order asked). */
const LOOKUP_MANY = `
  SELECT q.i::int AS i, ${COLUMNS("q.month")}
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS q(domain, c1, c2, month, i)
    JOIN domains d ON d.domain = q.domain
    JOIN accounts acc ON acc.id = d."accountId"
    LEFT JOIN addresses a ON a."domainId" = d.id AND a."localPart" IN (q.c1, q.c2)`;

type Asked = { key: LookupKey; resolve(rows: LookupRow[]): void; reject(err: unknown): void };

/**
 * RCPT lookups grouped as the accepts are (accept-batch.ts): a lookup asked while none is in flight
 * runs at once, alone; those asked meanwhile go together in the next query, one round trip for all
 * of them. Each still reads Postgres at its RCPT (no cache), so what it decides is as fresh as before.
 * Both statements are named: each pooled connection plans them once.
 */
export function lookupInBatches(db: Queryable, maxKeys = 64): Lookup {
  const asked: Asked[] = [];
  let busy = false;
  const next = () => {
    if (busy || asked.length === 0) return;
    busy = true;
    const batch = asked.splice(0, maxKeys);
    runBatch(db, batch).finally(() => {
      busy = false;
      next();
    });
  };
  return (key) =>
    new Promise<LookupRow[]>((resolve, reject) => {
      asked.push({ key, resolve, reject });
      next();
    });
}

async function runBatch(db: Queryable, batch: Asked[]): Promise<void> {
  try {
    const [only] = batch;
    if (batch.length === 1 && only) {
      const { domain, candidates, month } = only.key;
      const r = await db.query<LookupRow>({
        name: "ingest-rcpt-lookup",
        text: LOOKUP_ONE,
        values: [domain, candidates, month],
      });
      return only.resolve(r.rows);
    }
    const keys = batch.map((b) => b.key);
    const r = await db.query<LookupRow & { i: number }>({
      name: "ingest-rcpt-lookup-many",
      text: LOOKUP_MANY,
      values: [
        keys.map((k) => k.domain),
        keys.map((k) => k.candidates[0] ?? null),
        keys.map((k) => k.candidates[1] ?? null),
        keys.map((k) => k.month),
      ],
    });
    const rows: LookupRow[][] = batch.map(() => []);
    for (const { i, ...row } of r.rows) rows[i - 1]?.push(row);
    for (const [i, b] of batch.entries()) b.resolve(rows[i] ?? []);
  } catch (err) {
    for (const b of batch) b.reject(err);
  }
}
