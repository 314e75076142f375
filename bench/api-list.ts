/**
 * GET /emails through the API (real HTTP, real Postgres) against the same keyset SQL run directly
 * with pg, in one run: page 1, a deep page by cursor, `from=` and `q=`. Seeds its own database
 * (mailroom_bench_api) with INSERT … SELECT generate_series; reuses it when the row count matches.
 * Usage: npm run bench:api-list [-- emails] (default 200000; one account holds half of them)
 */
import { createHash, randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { loadavg } from "node:os";
import { createCursorCodec, createPrisma, ensureDatabase, migrate, migrationsDir } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { createRedis } from "@mailroom/queues";
import pg from "pg";
import { createApp } from "../services/api/src/app.ts";

const TOTAL = Number(process.argv[2] ?? 200_000);
const ROUNDS = 3;
const N = 200; // requests per measurement
const base = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const url = new URL(base);
url.pathname = "/mailroom_bench_api";
const dbUrl = url.toString();

await ensureDatabase(dbUrl);
await migrate(dbUrl, migrationsDir);
const pool = new pg.Pool({ connectionString: dbUrl, max: 4 });
const BIG = "acct_bench_big";
const have = Number((await pool.query(`SELECT count(*) FROM emails`)).rows[0].count);
if (have !== TOTAL) {
  console.log(`seeding ${TOTAL} emails…`);
  await pool.query(`TRUNCATE accounts CASCADE`);
  await pool.query(
    `INSERT INTO accounts (id, name) SELECT CASE WHEN a = 0 THEN '${BIG}' ELSE 'acct_bench_' || a END, 'bench' FROM generate_series(0, 99) a`,
  );
  await pool.query(`
    INSERT INTO threads (id, "accountId", subject, "lastMessageAt")
    SELECT 'thr_' || t, CASE WHEN t % 2 = 0 THEN '${BIG}' ELSE 'acct_bench_' || (1 + t % 99) END, 'hello', now()
      FROM generate_series(0, ${Math.ceil(TOTAL / 10)}) t`);
  await pool.query(`
    INSERT INTO emails (id, "accountId", "threadId", direction, "messageId", "references", "fromAddress", "toAddresses",
                        "ccAddresses", "replyTo", subject, "textBody", "htmlBody", "spamVerdict", "spfVerdict",
                        "dkimVerdict", "dmarcVerdict", "contentHash", "receivedAt")
    SELECT 'eml_' || lpad(i::text, 9, '0'), CASE WHEN (i / 10) % 2 = 0 THEN '${BIG}' ELSE 'acct_bench_' || (1 + (i / 10) % 99) END,
           'thr_' || (i / 10), 'inbound', '<' || i || '@x.example>', '{}', 'user' || (i % 5000) || '@sender' || (i % 50) || '.example',
           '{support@example.com}', '{}', '{}', 'Subject number ' || i, repeat('body text words ', 40) || i, '<p>html</p>', 'PASS',
           'PASS', 'PASS', 'PASS', md5(i::text), now() - (i || ' seconds')::interval
      FROM generate_series(1, ${TOTAL}) i`);
  await pool.query(`ANALYZE`);
}
const key = `svc_${randomBytes(18).toString("base64url")}`;
await pool.query(`INSERT INTO api_keys (id, "accountId", prefix, hash, scope) VALUES ($1, $2, 'svc_', $3, 'read')`, [
  `key_${randomBytes(6).toString("hex")}`,
  BIG,
  createHash("sha256").update(key).digest("hex"),
]);

const prisma = createPrisma(dbUrl);
const redis = createRedis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", "producer");
const cursors = createCursorCodec("bench-secret-bench-secret-bench-secret");
const app = createApp({
  prisma,
  redis,
  logger: createLogger("api", "error"),
  bodyLimit: "1mb",
  rateLimit: { limit: 1_000_000_000, windowSeconds: 60, prefix: `bench${Date.now()}` },
  cursors,
  checkDestination: async () => ({ ok: true }),
  config: { mxHost: "mx", dkimDomain: "d", publicApiUrl: "http://x", allowPrivateDestinations: true },
} as never);
const server = app.listen(0, "127.0.0.1");
await new Promise((r) => server.once("listening", r));
const port = (server.address() as AddressInfo).port;

// The deep page: the cursor of the row at position DEEP in the big account.
const DEEP = Math.floor(TOTAL / 2 / 100 - 1) * 100;
const deepRow = (
  await pool.query(
    `SELECT id, "receivedAt" FROM emails WHERE "accountId" = $1 ORDER BY "receivedAt" DESC, id DESC OFFSET $2 LIMIT 1`,
    [BIG, DEEP - 1],
  )
).rows[0];
const deepCursor = cursors.encode({ at: deepRow.receivedAt, id: deepRow.id });

const LIST_SQL = `SELECT e.id, e.direction, e."threadId", e."messageId", e."fromAddress", e."toAddresses", e.subject, e."spamVerdict", e."receivedAt",
  (SELECT count(*) FROM attachments a WHERE a."emailId" = e.id) AS "attachmentCount"
  FROM emails e WHERE e."accountId" = $1 AND ($2::timestamptz IS NULL OR (e."receivedAt", e.id) < ($2::timestamptz, $3::text))
    AND ($4::text IS NULL OR e."fromAddress" ILIKE '%' || $4 || '%')
  ORDER BY e."receivedAt" DESC, e.id DESC LIMIT 101`;

const cases: { name: string; path: string; sql: unknown[] }[] = [
  { name: "page 1", path: "/api/v1/emails?limit=100", sql: [BIG, null, null, null] },
  {
    name: `page ${DEEP / 100 + 1} by cursor`,
    path: `/api/v1/emails?limit=100&cursor=${encodeURIComponent(deepCursor)}`,
    sql: [BIG, deepRow.receivedAt, deepRow.id, null],
  },
  { name: "from=user42@", path: "/api/v1/emails?limit=100&from=user42%40", sql: [BIG, null, null, "user42@"] },
];

const timeIt = async (fn: () => Promise<unknown>) => {
  const t: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await fn();
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return { p50: t[Math.floor(N / 2)]!, p99: t[Math.floor(N * 0.99)]! };
};
// Warm up both paths (JIT, Prisma's and pg's connections) before anything is timed.
for (const c of cases) {
  for (let i = 0; i < 50; i++) {
    await (await fetch(`http://127.0.0.1:${port}${c.path}`, { headers: { authorization: `Bearer ${key}` } })).text();
    await pool.query(LIST_SQL, c.sql);
  }
}
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const results: string[] = [];
for (const c of cases) {
  const api: number[] = [];
  const raw: number[] = [];
  let count = 0;
  for (let r = 0; r < ROUNDS; r++) {
    api.push(
      (
        await timeIt(async () => {
          const res = await fetch(`http://127.0.0.1:${port}${c.path}`, { headers: { authorization: `Bearer ${key}` } });
          const body = (await res.json()) as { data: unknown[] };
          if (res.status !== 200) throw new Error(JSON.stringify(body));
          count = body.data.length;
        })
      ).p50,
    );
    raw.push((await timeIt(() => pool.query(LIST_SQL, c.sql))).p50);
  }
  const a = median(api);
  const b = median(raw);
  results.push(
    `${c.name.padEnd(22)} api p50 ${a.toFixed(2)} ms  raw SQL p50 ${b.toFixed(2)} ms  ×${(a / b).toFixed(2)}  (${count} rows)`,
  );
}
console.log(`${TOTAL} emails, ${TOTAL / 2} in the listed account; medians of ${ROUNDS} rounds of ${N} requests`);
for (const r of results) console.log(r);
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
server.close();
await prisma.$disconnect();
await redis.quit();
await pool.end();
