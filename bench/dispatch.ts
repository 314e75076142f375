// bench:dispatch — deliveries per second from the webhook-dispatcher process (its main.ts, default
// settings) to a fast local receiver, against a bare `got` loop POSTing the same bodies at the same
// concurrency; then the same deliveries with a second endpoint beside them that hangs (answers after
// its timeout) or answers 500, to show what a bad endpoint costs the healthy one. Also the got loop at
// the per-endpoint limit's concurrency (what one endpoint may get at once), and the CPU time per
// delivery of the dispatcher process against the bench process's (got loop and receiver) per request.
// Neighbours: one endpoint that hangs, one that answers 500, one that answers after 2 s, and 50
// endpoints of 50 accounts at once (half hanging, half 500). Each neighbour trial starts with the
// neighbour's circuit closed (a fresh failure, the worst case). Latency trials: the healthy endpoint
// gets a steady `--paced` deliveries/s (not a backlog) beside each neighbour's backlog; p99 from the
// job's enqueue to the receiver's arrival.
// Run: npm run -s bench:dispatch [-- --deliveries 1000 --rounds 3 --concurrency 48 --endpoint-concurrency 4 --paced 100]
import { performance } from "node:perf_hooks";
import { newId } from "@mailroom/db";
import { createQueue, createRedis } from "@mailroom/queues";
import { type Receiver, seedDomain, seedEndpoint, startReceiver } from "@mailroom/testing";
import got from "got";
import { enqueueAttempt } from "../services/webhook-dispatcher/src/dispatch.ts";
import { benchEnv } from "./lib/env.ts";
import { interleave, medianOf } from "./lib/interleave.ts";
import { memoryMB, startService, stopAll, treeCpuMs } from "./lib/procs.ts";
import { footer, header, load, ratio, table } from "./lib/report.ts";
import { copyRows, EMAIL_COLUMNS, emailRows } from "./lib/seed.ts";
import { flags, percentile } from "./lib/stats.ts";
import { cpuSplit, sampleCpu } from "./lib/system-cpu.ts";

const BENCH = "bench:dispatch";
const f = flags();
const N = f.num("deliveries", 1000);
const rounds = f.num("rounds", 3);
const concurrency = f.num("concurrency", 48); // the dispatcher's default (DISPATCHER_CONCURRENCY)
const endpointConcurrency = f.num("endpoint-concurrency", 4); // the dispatcher's default
const paced = f.num("paced", 100); // healthy deliveries per second in the latency trials
const PACED_SECONDS = 4;
const MANY = 50;
type BadKind = "hang" | "500" | "slow" | "many";
const BAD_KINDS: BadKind[] = ["hang", "500", "slow", "many"];
const BAD_NAMES: Record<BadKind, string> = {
  hang: "hanging endpoint",
  "500": "500 endpoint",
  slow: "slow (2 s) endpoint",
  many: `${MANY} failing endpoints of ${MANY} accounts`,
};

header(
  BENCH,
  `${N} deliveries per trial, dispatcher concurrency ${concurrency}, endpoint concurrency ${endpointConcurrency}, ${rounds} rounds`,
);
/** A trial's deliveries (or requests) per second, and CPU ms per delivery of the process doing them. */
type Result = {
  rate: number;
  cpuMs: number;
  /**
   * Dispatcher trials: CPU ms per healthy delivery of the dispatcher, its Postgres backends and Redis
   * (what a neighbour's jobs add to it is their cost, whatever else the machine runs), and the
   * neighbour's requests that reached its receiver during the trial.
   */
  sysMs?: Record<string, number>;
  neighbourRequests?: number;
  /** Latency trials: p99 ms from a healthy delivery's enqueue to its arrival. */
  p99?: number;
};

const env = await benchEnv(BENCH);
const database = new URL(env.databaseUrl).pathname.slice(1);
/** The process groups (bench/lib/system-cpu.ts) that serve a delivery besides the receiver. */
const SYSTEM = ["webhook-dispatcher", "postgres (bench database backends)", "redis-server (shared)"];
const receivers: Receiver[] = [];
const receiver = async () => {
  const r = await startReceiver();
  receivers.push(r);
  return r;
};
try {
  const healthy = await receiver();
  // One receiver per kind of neighbour: with one for both, the hanging trial's requests (open until
  // the endpoint's 5 s timeout) still held its slots during a 500 trial right after it, whose jobs
  // were then parked as busy instead of making their 500 attempts.
  const hanging = await receiver();
  const failing = await receiver();
  const slow = await receiver();
  const manyHanging = await receiver();
  const manyFailing = await receiver();
  for (const r of [hanging, manyHanging]) r.respond(() => ({ status: 200, delayMs: 30_000 }));
  for (const r of [failing, manyFailing]) r.respond(() => ({ status: 500, body: "no" }));
  slow.respond(() => ({ status: 200, delayMs: 2_000 }));
  const neighbourReceivers = [hanging, failing, slow, manyHanging, manyFailing];
  /** An account (domain, thread) whose emails the deliveries belong to. */
  async function owner(n: number) {
    const d = await seedDomain(env.prisma, `bench-dispatch-${n}.example`, { plan: "scale" });
    const threadId = newId("thread");
    await env.pool.query(
      `INSERT INTO threads (id, "accountId", subject, "lastMessageAt") VALUES ($1, $2, 'bench', now())`,
      [threadId, d.accountId],
    );
    return { accountId: d.accountId, domainId: d.domainId, threadId, recipient: `in@bench-dispatch-${n}.example` };
  }
  const main = await owner(0);
  const goodEp = await seedEndpoint(env.prisma, main.accountId, `${healthy.url}/hook`);
  type Ep = { id: string; owner: typeof main };
  const one = async (url: string): Promise<Ep[]> => [
    { id: await seedEndpoint(env.prisma, main.accountId, url), owner: main },
  ];
  const badEps: Record<BadKind, Ep[]> = {
    hang: await one(`${hanging.url}/hook`), // timeoutSeconds 5
    "500": await one(`${failing.url}/hook`),
    slow: await one(`${slow.url}/hook`),
    many: [],
  };
  for (let k = 0; k < MANY; k++) {
    const o = await owner(k + 1);
    const url = `${(k % 2 === 0 ? manyHanging : manyFailing).url}/hook/${k}`;
    badEps.many.push({ id: await seedEndpoint(env.prisma, o.accountId, url), owner: o });
  }

  const producer = createRedis(env.redisUrl, "producer");
  const queue = createQueue("delivery", { connection: producer, prefix: env.redisPrefix });
  const dispatcher = startService("webhook-dispatcher", {
    ...env.serviceEnv,
    ALLOW_PRIVATE_DESTINATIONS: "true",
    DISPATCHER_CONCURRENCY: String(concurrency),
    DISPATCHER_ENDPOINT_CONCURRENCY: String(endpointConcurrency),
  });

  let emailNo = 0;
  /** `n` stored emails with a pending delivery each, round robin over `eps` (each its account's). */
  async function deliveries(n: number, eps: Ep[]): Promise<string[]> {
    const from = emailNo;
    emailNo += n;
    const ep = (i: number) => eps[(i - from) % eps.length] as Ep;
    await copyRows(
      env.databaseUrl,
      "emails",
      EMAIL_COLUMNS,
      emailRows({
        from,
        to: from + n,
        owner: (i) => ep(i).owner,
        sender: (i) => `s${i % 50}@sender.test`,
        newest: new Date(),
      }),
    );
    const ids = Array.from({ length: n }, () => newId("delivery"));
    await copyRows(
      env.databaseUrl,
      "deliveries",
      ["id", "accountId", "emailId", "endpointId", "maxAttempts"],
      ids.map((id, k) => {
        const e = ep(from + k);
        endpointOf.set(id, e.id);
        return [id, e.owner.accountId, `em_bench${(from + k).toString(36).padStart(10, "0")}`, e.id, 5];
      }),
    );
    return ids;
  }
  /** Each delivery's endpoint: its job names it, as the rule engine's do. */
  const endpointOf = new Map<string, string>();
  const queueAttempt = (id: string) => enqueueAttempt(queue, id, 1, new Date(), endpointOf.get(id));
  const good = { id: goodEp, owner: main };
  const enqueue = async (ids: string[]) => {
    for (let k = 0; k < ids.length; k += 200) {
      await Promise.all(ids.slice(k, k + 200).map(queueAttempt));
    }
  };
  const rateOf = (r: Receiver) => {
    const times = r.requests.map((q) => q.receivedAt);
    return (times.length - 1) / ((Math.max(...times) - Math.min(...times)) / 1000);
  };
  const waitFor = async (r: Receiver, n: number) => {
    const deadline = Date.now() + 60_000 + n * 100;
    while (r.requests.length < n) {
      if (Date.now() > deadline) throw new Error(`only ${r.requests.length}/${n} deliveries arrived`);
      await new Promise((res) => setTimeout(res, 50));
    }
  };

  const allBad = Object.values(badEps).flatMap((eps) => eps.map((e) => e.id));
  /**
   * Before each trial: the neighbours' deliveries retired (their retries must not run into this
   * trial) and their circuits closed, so each trial meets a neighbour that starts failing now.
   */
  async function resetNeighbours() {
    await env.pool.query(`UPDATE deliveries SET status = 'dead' WHERE "endpointId" = ANY($1) AND status <> 'dead'`, [
      allBad,
    ]);
    // A quiet start: the last trial's jobs (parked, delayed retries) gone, its attempts finished (a
    // hanging one within the endpoint's 5 s timeout), so no trial pays for the one before it.
    await queue.drain(true);
    const deadline = Date.now() + 60_000;
    while ((await queue.getActiveCount()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    for (const r of [healthy, ...neighbourReceivers]) r.requests.length = 0;
    await env.pool.query(
      `UPDATE endpoints SET "consecutiveFailures" = 0, "failureRunStartedAt" = NULL, "failingSince" = NULL, "probeAt" = NULL
        WHERE id = ANY($1)`,
      [allBad],
    );
    // The dispatcher's circuit and admission keys (not the slots: a hanging request of the last
    // round may still hold one, as it would in production).
    for (const kind of ["circuit", "tickets"]) {
      const stale = await producer.keys(`${env.redisPrefix}:endpoint-${kind}:*`);
      if (stale.length > 0) await producer.del(...stale);
    }
  }
  const neighbourSent = () => neighbourReceivers.reduce((sum, r) => sum + r.requests.length, 0);

  /** The dispatcher's rate to the healthy endpoint, with `badKind` deliveries beside it (as many). */
  async function dispatcherTrial(badKind: "none" | BadKind): Promise<Result> {
    await resetNeighbours();
    const goodIds = await deliveries(N, [good]);
    const other = badKind === "none" ? [] : await deliveries(N, badEps[badKind]);
    // Interleaved, as mail for both endpoints would arrive.
    const cpu0 = treeCpuMs(dispatcher.pid);
    const sys0 = sampleCpu(process.pid, ["webhook-dispatcher"], database);
    await enqueue(goodIds.flatMap((id, k) => (other[k] ? [id, other[k] as string] : [id])));
    await waitFor(healthy, N);
    // Beside a bad endpoint the process also works on its deliveries: CPU per delivery only alone.
    const cpuMs = (treeCpuMs(dispatcher.pid) - cpu0) / N;
    const split = cpuSplit(sys0, sampleCpu(process.pid, ["webhook-dispatcher"], database));
    const sysMs = Object.fromEntries(SYSTEM.map((g) => [g, (split.get(g) ?? 0) / N]));
    return { rate: rateOf(healthy), cpuMs, sysMs, neighbourRequests: neighbourSent() };
  }

  /**
   * The healthy endpoint at a steady `paced`/s for PACED_SECONDS, beside `badKind`'s backlog of N
   * deliveries queued at the start: p99 from each healthy job's enqueue to its arrival.
   */
  async function latencyTrial(badKind: "none" | BadKind): Promise<Result> {
    await resetNeighbours();
    const count = paced * PACED_SECONDS;
    const goodIds = await deliveries(count, [good]);
    if (badKind !== "none") await enqueue(await deliveries(N, badEps[badKind]));
    const queuedAt = new Map<string, number>();
    const t0 = Date.now();
    for (const [k, id] of goodIds.entries()) {
      const wait = t0 + (k * 1000) / paced - Date.now();
      if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      queuedAt.set(id, Date.now());
      await queueAttempt(id);
    }
    await waitFor(healthy, count);
    const ms = healthy.requests.map((q) => {
      const id = String(q.headers["x-service-delivery-id"]);
      return q.receivedAt - (queuedAt.get(id) ?? q.receivedAt);
    });
    return { rate: rateOf(healthy), cpuMs: 0, neighbourRequests: neighbourSent(), p99: percentile(ms, 99) };
  }

  /** The floor: got POSTing a real webhook body as often, at `parallel` concurrency. */
  async function gotTrial(body: Buffer, parallel: number): Promise<Result> {
    let next = 0;
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next++ < N) {
          await got.post(`${healthy.url}/hook`, {
            body,
            headers: { "content-type": "application/json" },
            timeout: { request: 5_000 },
            retry: { limit: 0 },
          });
        }
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    return { rate: N / ((performance.now() - t0) / 1000), cpuMs: (cpu.user + cpu.system) / 1000 / N };
  }

  // Warm-up, which also gives the got loop a real payload to send.
  await dispatcherTrial("none");
  const gotBody = healthy.requests[0]?.body ?? Buffer.from("{}");
  console.log(`webhook body: ${gotBody.length} bytes — ${load()}`);

  const results = await interleave<Result>(
    rounds,
    [
      { name: "dispatcher", run: () => dispatcherTrial("none") },
      { name: "got loop", run: () => gotTrial(gotBody, concurrency) },
      { name: "got loop at the endpoint limit", run: () => gotTrial(gotBody, endpointConcurrency) },
      ...BAD_KINDS.map((k) => ({ name: `dispatcher + ${BAD_NAMES[k]}`, run: () => dispatcherTrial(k) })),
      { name: "paced", run: () => latencyTrial("none") },
      ...BAD_KINDS.map((k) => ({ name: `paced + ${BAD_NAMES[k]}`, run: () => latencyTrial(k) })),
    ],
    (name, round, r) => console.log(`round ${round + 1} ${name}: ${r.rate.toFixed(1)}/s — ${load()}`),
  );
  const med = (name: string) => medianOf(results.get(name), (r) => r.rate);
  const cpu = (name: string) => medianOf(results.get(name), (r) => r.cpuMs).toFixed(2);
  const sys = (name: string, g?: string) =>
    medianOf(results.get(name), (r) =>
      g ? (r.sysMs?.[g] ?? Number.NaN) : SYSTEM.reduce((sum, k) => sum + (r.sysMs?.[k] ?? Number.NaN), 0),
    );
  const sent = (name: string) => medianOf(results.get(name), (r) => r.neighbourRequests ?? Number.NaN);
  const alone = med("dispatcher");
  const floor = med("got loop");
  const atLimit = med("got loop at the endpoint limit");
  console.log("\nDeliveries per second to the healthy endpoint, medians of the rounds");
  table(
    ["run", "deliveries/s", "÷ got loop", "healthy endpoint's drop", "CPU ms per delivery"],
    [
      ["dispatcher (alone)", alone, ratio(alone, floor), "–", `${cpu("dispatcher")} (dispatcher process)`],
      [`bare got loop, concurrency ${concurrency}`, floor, "1.00×", "–", `${cpu("got loop")} (got + receiver)`],
      [
        `bare got loop, concurrency ${endpointConcurrency} (the endpoint limit)`,
        atLimit,
        ratio(atLimit, floor),
        "–",
        `${cpu("got loop at the endpoint limit")} (got + receiver)`,
      ],
      ...BAD_KINDS.map((k) => {
        const r = med(`dispatcher + ${BAD_NAMES[k]}`);
        return [`dispatcher + ${BAD_NAMES[k]}`, r, ratio(r, floor), `${(100 * (1 - r / alone)).toFixed(1)} %`, "–"];
      }),
    ],
  );
  const p99 = (name: string) => medianOf(results.get(name), (r) => r.p99 ?? Number.NaN);
  console.log(
    `\nHealthy endpoint at ${paced}/s beside each neighbour's backlog: enqueue → arrival, medians of the rounds`,
  );
  table(
    ["run", "p99 ms", "p99 − alone (ms)", "neighbour's requests received"],
    [
      ["paced (alone)", p99("paced").toFixed(0), "–", "–"],
      ...BAD_KINDS.map((k) => {
        const name = `paced + ${BAD_NAMES[k]}`;
        return [name, p99(name).toFixed(0), `+${(p99(name) - p99("paced")).toFixed(0)}`, `${sent(name)} of ${N}`];
      }),
    ],
  );
  // On a busy machine the rates above move by 2× from round to round; the CPU a neighbour's jobs add
  // per healthy delivery does not, and on a saturated machine it is what the healthy endpoint loses.
  console.log(`\nCPU ms per healthy delivery, dispatcher + its Postgres backends + Redis (${SYSTEM.join(", ")})`);
  table(
    ["run", "CPU ms per healthy delivery", "÷ alone", "dispatcher · Postgres · Redis", "neighbour's requests received"],
    ["dispatcher", ...BAD_KINDS.map((k) => `dispatcher + ${BAD_NAMES[k]}`)].map((name) => [
      name,
      sys(name).toFixed(2),
      ratio(sys(name), sys("dispatcher")),
      SYSTEM.map((g) => sys(name, g).toFixed(2)).join(" · "),
      name === "dispatcher" ? "–" : `${sent(name)} of ${N}`,
    ]),
  );
  const m = memoryMB(dispatcher.pid);
  console.log(`\nwebhook-dispatcher memory: peak ${m.peak.toFixed(0)} MB, now ${m.now.toFixed(0)} MB`);
  footer();
  await queue.close();
  producer.disconnect();
} finally {
  await stopAll();
  for (const r of receivers) await r.close();
  await env.close();
}
