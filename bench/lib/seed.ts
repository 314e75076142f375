// Bulk rows for the benches, written with COPY (psql's COPY … FROM STDIN, fed from a generator), so
// a million emails take tens of seconds rather than an hour of INSERTs.
import { spawn } from "node:child_process";
import type pg from "pg";
import { ensureDebianTool } from "./tools.ts";

/** One CSV field: arrays become Postgres array literals; anything with a comma, quote or newline is quoted. */
function field(v: string | number | null | string[]): string {
  if (v === null) return "";
  const s = Array.isArray(v) ? `{${v.map((x) => `"${x.replace(/["\\]/g, "\\$&")}"`).join(",")}}` : String(v);
  return /[",\r\n]/.test(s) || s === "" ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * COPYs `rows` into `table`. Foreign-key triggers are off for the session (session_replication_role
 * = replica): the generator only writes ids that exist, and checking each row would double the time.
 */
export async function copyRows(
  databaseUrl: string,
  table: string,
  columns: string[],
  rows: Iterable<(string | number | null | string[])[]>,
): Promise<void> {
  ensureDebianTool("/usr/bin/psql", "postgresql-client");
  const cols = columns.map((c) => `"${c}"`).join(", ");
  const psql = spawn(
    "psql",
    [
      ...[databaseUrl, "-q", "-v", "ON_ERROR_STOP=1", "-c", "SET session_replication_role = replica"],
      ...["-c", `COPY "${table}" (${cols}) FROM STDIN WITH (FORMAT csv)`],
    ],
    { stdio: ["pipe", "ignore", "pipe"] },
  );
  let stderr = "";
  psql.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number>((r) => psql.once("exit", (code) => r(code ?? 1)));
  let batch = "";
  for (const row of rows) {
    batch += `${row.map(field).join(",")}\n`;
    if (batch.length > 1 << 20) {
      if (!psql.stdin.write(batch)) await new Promise((r) => psql.stdin.once("drain", r));
      batch = "";
    }
  }
  psql.stdin.end(batch);
  const code = await exited;
  if (code !== 0) throw new Error(`COPY ${table} failed (${code}): ${stderr}`);
}

/** Runs `fill` with the table's secondary indexes dropped, then rebuilds them exactly as they were. */
export async function withoutIndexes(pool: pg.Pool, table: string, fill: () => Promise<void>): Promise<void> {
  const { rows } = await pool.query<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes
      WHERE tablename = $1 AND indexname NOT IN (SELECT conname FROM pg_constraint)`,
    [table],
  );
  for (const r of rows) await pool.query(`DROP INDEX "${r.indexname}"`);
  try {
    await fill();
  } finally {
    await pool.query("SET maintenance_work_mem = '256MB'").catch(() => undefined);
    for (const r of rows) await pool.query(r.indexdef);
    await pool.query(`ANALYZE "${table}"`);
  }
}

export type EmailOwner = { accountId: string; domainId: string | null; threadId: string; recipient: string };

export const EMAIL_COLUMNS = [
  "id",
  "accountId",
  "domainId",
  "threadId",
  "direction",
  "messageId",
  "references",
  "fromAddress",
  "fromName",
  "toAddresses",
  "ccAddresses",
  "replyTo",
  "subject",
  "textBody",
  "htmlBody",
  "recipient",
  "spfVerdict",
  "dkimVerdict",
  "dmarcVerdict",
  "contentHash",
  "receivedAt",
];

const WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split(
  " ",
);

/**
 * Inbound emails `from`…`to-1`: owner `owner(i)`, received one second apart going back from `newest`,
 * sender `sender(i)`; subjects and bodies from a small vocabulary (so `q` has something to find).
 */
export function* emailRows(opts: {
  from: number;
  to: number;
  owner: (i: number) => EmailOwner;
  sender: (i: number) => string;
  newest: Date;
}): Generator<(string | number | null | string[])[]> {
  const t0 = opts.newest.getTime();
  for (let i = opts.from; i < opts.to; i++) {
    const o = opts.owner(i);
    const w = (k: number) => WORDS[(i * 7 + k * 3) % WORDS.length] as string;
    yield [
      `em_bench${i.toString(36).padStart(10, "0")}`,
      o.accountId,
      o.domainId,
      o.threadId,
      "inbound",
      `<m${i}@bench.test>`,
      [],
      opts.sender(i),
      "Bench Sender",
      [o.recipient],
      [],
      [],
      `${w(1)} ${w(2)} report ${i}`,
      `Hello, this is message ${i} about ${w(3)} and ${w(4)}. ${"Lorem ipsum dolor sit amet. ".repeat(4)}`,
      "",
      o.recipient,
      "PASS",
      "PASS",
      "PASS",
      `h${i}`,
      new Date(t0 - i * 1000).toISOString(),
    ];
  }
}

export const DELIVERY_COLUMNS = [
  "id",
  "accountId",
  "emailId",
  "endpointId",
  "status",
  "attemptCount",
  "maxAttempts",
  "deliveredAt",
  "createdAt",
  "updatedAt",
];

export const ATTEMPT_COLUMNS = [
  "id",
  "deliveryId",
  "number",
  "statusCode",
  "durationMs",
  "error",
  "responseBody",
  "startedAt",
  "finishedAt",
];

/** Delivery `i` of email `i` (emailRows' ids and times): one in 50 dead after 3 attempts, the rest delivered at once. */
const deliveryFate = (i: number) =>
  (i >> 1) % 50 === 1 ? { status: "dead", attempts: 3 } : { status: "delivered", attempts: 1 };
const benchEmailId = (i: number) => `em_bench${i.toString(36).padStart(10, "0")}`;
const benchDeliveryId = (i: number) => `dlv_bench${i.toString(36).padStart(10, "0")}`;

/** One delivery per listed email index, to `endpointId(i)`, created when the email was received. */
export function* deliveryRows(opts: {
  indexes: Iterable<number>;
  accountId: (i: number) => string;
  endpointId: (i: number) => string;
  newest: Date;
}): Generator<(string | number | null | string[])[]> {
  const t0 = opts.newest.getTime();
  for (const i of opts.indexes) {
    const at = new Date(t0 - i * 1000).toISOString();
    const fate = deliveryFate(i);
    const ok = fate.status === "delivered";
    const id = benchDeliveryId(i);
    yield [
      id,
      opts.accountId(i),
      benchEmailId(i),
      opts.endpointId(i),
      fate.status,
      fate.attempts,
      3,
      ok ? at : null,
      at,
      at,
    ];
  }
}

/** The attempts of deliveryRows' deliveries: durations spread over 20–500 ms, failures answered 503. */
export function* attemptRows(opts: { indexes: Iterable<number>; newest: Date }): Generator<(string | number | null)[]> {
  const t0 = opts.newest.getTime();
  for (const i of opts.indexes) {
    const fate = deliveryFate(i);
    for (let n = 1; n <= fate.attempts; n++) {
      const ok = fate.status === "delivered";
      const start = t0 - i * 1000 + (n - 1) * 60_000;
      const ms = 20 + ((i * 37 + n * 11) % 480);
      const [from, to] = [new Date(start).toISOString(), new Date(start + ms).toISOString()];
      const id = benchDeliveryId(i);
      yield [`${id}_${n}`, id, n, ok ? 200 : 503, ms, ok ? null : "HTTP 503", ok ? "ok" : "unavailable", from, to];
    }
  }
}
