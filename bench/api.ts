// bench:api — GET /api/v1/emails?limit=100 through the API process (its main.ts) against the same
// question asked directly with pg, on a database of --rows emails (default 1,000,000) across 100
// accounts, seeded with COPY. Cases: the first page, a deep page by cursor, a `q` search and a
// `from=` filter, for the largest account (half of all rows). Latencies are sequential requests over
// a kept-alive connection; API and pg alternate in interleaved rounds.
// The aggregates trial: the big account also has one delivery per email (two endpoints, one in 50
// dead after 3 attempts) and a block record per 200 emails; GET /stats?window=24h and 30d and
// GET /endpoints/{id}/health are timed against page 1 of the list in the same rounds.
// Run: npm run -s bench:api [-- --rows 1000000 --requests 60 --rounds 3 --page 10000 --only list|stats]
import { performance } from "node:perf_hooks";
import { createCursorCodec } from "@mailroom/db";
import { sparePort } from "@mailroom/testing";
import { EMAIL_SEARCH_DOCUMENT } from "../services/api/src/ops/email-search.ts";
import { runCommand } from "../tools/admin/src/commands.ts";
import { benchEnv } from "./lib/env.ts";
import { interleave } from "./lib/interleave.ts";
import { memoryMB, startService, stopAll, waitForPort } from "./lib/procs.ts";
import { footer, header, load, ratio, table } from "./lib/report.ts";
import {
  ATTEMPT_COLUMNS,
  attemptRows,
  copyRows,
  DELIVERY_COLUMNS,
  deliveryRows,
  EMAIL_COLUMNS,
  emailRows,
  withoutIndexes,
} from "./lib/seed.ts";
import { flags, percentile } from "./lib/stats.ts";

const BENCH = "bench:api";
const f = flags();
const ROWS = Math.round(f.num("rows", 1_000_000));
const ACCOUNTS = 100;
const requests = f.num("requests", 60);
const rounds = f.num("rounds", 3);
const wantPage = f.num("page", 10_000);
const LIMIT = 100;
const SECRET = "bench-cursor-secret-0123456789";
const RARE = "rare.sender@vip.example";
const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined;

header(
  BENCH,
  `${ROWS.toLocaleString("en-US")} emails across ${ACCOUNTS} accounts (one holds half); limit ${LIMIT}; ${requests} requests × ${rounds} rounds per case`,
);

const NEWEST = new Date();
/** The big account's emails: every even index (emailRows' owner below). */
const bigIndexes = function* () {
  for (let i = 0; i < ROWS; i += 2) yield i;
};

/** Two endpoints, a delivery per email of `accountId` with its attempts, a block record per 200 emails. */
async function seedDeliveries(
  env: Awaited<ReturnType<typeof benchEnv>>,
  accountId: string,
  idx: () => Iterable<number>,
  newest: Date,
) {
  const t0 = performance.now();
  await env.pool.query(
    `INSERT INTO endpoints (id, "accountId", name, url, secret) VALUES
       ('ep_bench0', $1, 'bench 0', 'https://a.bench.test/hook', 'whsec_bench'),
       ('ep_bench1', $1, 'bench 1', 'https://b.bench.test/hook', 'whsec_bench')`,
    [accountId],
  );
  const endpointId = (i: number) => `ep_bench${(i >> 1) % 2}`;
  await withoutIndexes(env.pool, "deliveries", () =>
    copyRows(
      env.databaseUrl,
      "deliveries",
      DELIVERY_COLUMNS,
      deliveryRows({ indexes: idx(), accountId: () => accountId, endpointId, newest }),
    ),
  );
  await withoutIndexes(env.pool, "delivery_attempts", () =>
    copyRows(env.databaseUrl, "delivery_attempts", ATTEMPT_COLUMNS, attemptRows({ indexes: idx(), newest })),
  );
  await env.pool.query(
    `INSERT INTO block_records (id, "accountId", "ruleName", sender, recipient, subject, "receivedAt")
       SELECT 'blk_bench' || k, $1, 'bench', 'spam@x.example', 'in@a0.bench.test', 'spam', $2::timestamptz - k * interval '400 seconds'
         FROM generate_series(0, $3 - 1) k`,
    [accountId, newest.toISOString(), Math.ceil(ROWS / 400)],
  );
  await env.pool.query("VACUUM ANALYZE deliveries, delivery_attempts, block_records, emails");
  console.log(
    `seeded deliveries, attempts and block records in ${((performance.now() - t0) / 1000).toFixed(1)} s — ${load()}`,
  );
}

const env = await benchEnv(BENCH);
try {
  // Accounts and one thread each, then the emails by COPY with the secondary indexes rebuilt after.
  const acc = (k: number) => `acc_bench${k}`;
  await env.pool.query(
    `INSERT INTO accounts (id, name, plan) SELECT 'acc_bench' || k, 'bench ' || k, 'scale' FROM generate_series(0, $1 - 1) k`,
    [ACCOUNTS],
  );
  await env.pool.query(
    `INSERT INTO threads (id, "accountId", subject, "lastMessageAt")
       SELECT 'thr_bench' || k, 'acc_bench' || k, 'bench', now() FROM generate_series(0, $1 - 1) k`,
    [ACCOUNTS],
  );
  const owners = Array.from({ length: ACCOUNTS }, (_, k) => ({
    accountId: acc(k),
    domainId: null,
    threadId: `thr_bench${k}`,
    recipient: `in@a${k}.bench.test`,
  }));
  const t0 = performance.now();
  await withoutIndexes(env.pool, "emails", () =>
    copyRows(
      env.databaseUrl,
      "emails",
      EMAIL_COLUMNS,
      emailRows({
        from: 0,
        to: ROWS,
        // Every other email is the big account's; the rest spread over the 99 others.
        owner: (i) => owners[i % 2 === 0 ? 0 : 1 + ((i >> 1) % (ACCOUNTS - 1))] as (typeof owners)[number],
        // One in a thousand from a rare sender: `from=` must find 100 of them far apart.
        sender: (i) => (i % 1000 === 0 ? RARE : `news${i % 97}@bulk${i % 13}.example`),
        newest: NEWEST,
      }),
    ),
  );
  console.log(
    `seeded ${ROWS.toLocaleString("en-US")} emails with COPY, indexes rebuilt, in ${((performance.now() - t0) / 1000).toFixed(1)} s — ${load()}`,
  );

  const big = acc(0);
  const newest = NEWEST;
  if (only !== "list") await seedDeliveries(env, big, bigIndexes, newest);
  const key = await runCommand(env.prisma, ["keys", "create", "--account", big, "--scope", "read"]);
  if (!key.ok) throw new Error(key.error);
  const apiKey = (key.value as { key: string }).key;
  const port = await sparePort();
  const api = startService("api", {
    ...env.serviceEnv,
    API_PORT: String(port),
    API_HOST: "127.0.0.1",
    RATE_LIMIT_REQUESTS: "0",
    CURSOR_SECRET: SECRET,
  });
  await waitForPort(port, "api");

  // The deep page: its cursor is the position of the last row of the page before it.
  const bigRows = Math.ceil(ROWS / 2);
  const page = Math.min(wantPage, Math.floor(bigRows / LIMIT));
  const { rows: at } = await env.pool.query<{ receivedAt: Date; id: string }>(
    `SELECT "receivedAt", id FROM emails WHERE "accountId" = $1 ORDER BY "receivedAt" DESC, id DESC OFFSET $2 LIMIT 1`,
    [big, (page - 1) * LIMIT - 1],
  );
  const pos = at[0] as { receivedAt: Date; id: string };
  const cursor = createCursorCodec(SECRET).encode({ at: pos.receivedAt, id: pos.id });

  type Case = { name: string; query: string; where: string; params: unknown[] };
  const cases: Case[] = [
    { name: "page 1", query: "", where: "", params: [] },
    {
      name: `page ${page.toLocaleString("en-US")} (cursor)`,
      query: `&cursor=${cursor}`,
      where: `AND ("receivedAt", id) < ($2::timestamptz, $3)`,
      params: [pos.receivedAt.toISOString(), pos.id],
    },
    {
      name: "q=foxtrot report",
      query: "&q=foxtrot%20report",
      where: `AND ${EMAIL_SEARCH_DOCUMENT} @@ websearch_to_tsquery('simple'::regconfig, $2)`,
      params: ["foxtrot report"],
    },
    {
      name: "from=rare.sender",
      query: "&from=rare.sender",
      where: `AND "fromAddress" ILIKE $2`,
      params: ["%rare.sender%"],
    },
  ];

  const url = `http://127.0.0.1:${port}/api/v1/emails?limit=${LIMIT}`;
  const viaApi = async (c: Case) => {
    const res = await fetch(url + c.query, { headers: { authorization: `Bearer ${apiKey}` } });
    const body = (await res.json()) as { data?: unknown[] };
    if (res.status !== 200 || !body.data?.length)
      throw new Error(`${c.name}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
  };
  // The page's rows with everything the API returns (all columns, the attachment count), one statement.
  const viaPg = async (c: Case) => {
    const { rows } = await env.pool.query(
      `SELECT e.*, (SELECT count(*) FROM attachments a WHERE a."emailId" = e.id) AS "attachmentCount"
         FROM emails e WHERE "accountId" = $1 ${c.where}
         ORDER BY "receivedAt" DESC, id DESC LIMIT ${LIMIT + 1}`,
      [big, ...c.params],
    );
    if (!rows.length) throw new Error(`${c.name}: no rows`);
  };
  const timed = async (fn: () => Promise<void>) => {
    const out: number[] = [];
    for (let i = 0; i < requests; i++) {
      const s = performance.now();
      await fn();
      out.push(performance.now() - s);
    }
    return out;
  };

  const rows: (string | number)[][] = [];
  let page1Api = Number.NaN;
  for (const c of only === "stats" ? [] : cases) {
    await viaApi(c); // warm-up: plans cached, pages in shared buffers
    await viaPg(c);
    const r = await interleave<number[]>(rounds, [
      { name: "api", run: () => timed(() => viaApi(c)) },
      { name: "pg", run: () => timed(() => viaPg(c)) },
    ]);
    const a = (r.get("api") ?? []).flat();
    const p = (r.get("pg") ?? []).flat();
    const [a50, a99, p50, p99] = [percentile(a, 50), percentile(a, 99), percentile(p, 50), percentile(p, 99)];
    if (c === cases[0]) page1Api = a50;
    rows.push([c.name, a50, a99, p50, p99, ratio(a50, p50), c === cases[1] ? ratio(a50, page1Api) : "–"]);
    console.log(`${c.name}: done — ${load()}`);
  }
  console.log(
    `\nGET /api/v1/emails?limit=${LIMIT}, account with ${bigRows.toLocaleString("en-US")} of ${ROWS.toLocaleString("en-US")} emails (ms)`,
  );
  table(["case", "API p50", "API p99", "pg p50", "pg p99", "API ÷ pg (p50)", "÷ page 1 (API p50)"], rows);
  if (only !== "list") {
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      const body = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
      return body;
    };
    const stats = [
      { name: "page 1 (baseline)", path: `/emails?limit=${LIMIT}` },
      { name: "stats window=24h", path: "/stats?window=24h" },
      { name: "stats window=30d", path: "/stats?window=30d" },
      { name: "endpoint health", path: "/endpoints/ep_bench1/health" },
    ];
    // The first 30-day request counts the 28 closed days into stats_days; the timed ones read them.
    const cold = performance.now();
    const totals = (await get("/stats?window=30d")).totals;
    const coldMs = performance.now() - cold;
    console.log(
      `\nfirst 30d request (counts the closed days): ${coldMs.toFixed(0)} ms; totals: ${JSON.stringify(totals)}`,
    );
    for (const c of stats) await get(c.path); // warm-up
    const r = await interleave<number[]>(
      rounds,
      stats.map((c) => ({ name: c.name, run: () => timed(async () => void (await get(c.path))) })),
    );
    const base = percentile((r.get(stats[0]?.name ?? "") ?? []).flat(), 50);
    const statRows = stats.map((c) => {
      const a = (r.get(c.name) ?? []).flat();
      return [c.name, percentile(a, 50), percentile(a, 99), ratio(percentile(a, 50), base)];
    });
    console.log(
      `\nAggregates for the account with ${bigRows.toLocaleString("en-US")} emails and deliveries (ms) — ${load()}`,
    );
    table(["case", "API p50", "API p99", "÷ page 1 (p50)"], statRows);
  }
  const m = memoryMB(api.pid);
  console.log(`\napi memory: peak ${m.peak.toFixed(0)} MB, now ${m.now.toFixed(0)} MB`);
  footer();
} finally {
  await stopAll();
  await env.close();
}
