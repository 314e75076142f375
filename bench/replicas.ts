// bench:replicas — N replicas each of smtp-ingest, rule-engine and webhook-dispatcher as real
// processes (e2e/fleet, the rolling-restart test's harness), N = 1, 2, 3 in turn on a fresh address
// and endpoint each: closed-loop SMTP load (`--connections` sessions, one message each, for
// `--seconds`), then the drain of what was accepted. Per N: accepted and delivered msg/s (wall clock,
// first 250 to last webhook), 250 → webhook p50/p99, CPU ms per message of each service (all its
// replicas, from /proc/<pid>/stat, children and threads included), correctness (lost, stored twice,
// two delivery ids) and the most requests the one endpoint had in flight at once (the
// per-endpoint limit must hold across dispatcher replicas). Then a rolling restart at N = 2 under
// open-loop load with 5 MB uploads (`--roll-rate`, `--roll-big`): sessions, 250s, stored, lost, cut,
// 250 → webhook p50/p99 while the roll lasted.
// Run: flock /work/bench.lock npm run -s bench:replicas [-- --replicas 1,2,3 --seconds 30
//        --connections 16 --roll-rate 20 --roll-big 4 --no-roll]
import { performance } from "node:perf_hooks";
import { type DnsServer, seedAddress, seedDomain, seedEndpoint, startDnsServer } from "@mailroom/testing";
import { FLEET_SERVICES, type Fleet, type FleetService, startFleet } from "../e2e/fleet/fleet.ts";
import { type CountingReceiver, startCountingReceiver, startLoad } from "../e2e/fleet/load.ts";
import {
  describeReport,
  type FleetReport,
  fleetReport,
  latencyIn,
  stalledJobs,
  waitSettled,
} from "../e2e/fleet/report.ts";
import { rollUnderLoad } from "../e2e/fleet/roll.ts";
import { type Outcome, sendMessage } from "../e2e/fleet/smtp.ts";
import { type BenchEnv, benchEnv } from "./lib/env.ts";
import { treeCpuMs } from "./lib/procs.ts";
import { fmt, footer, header, table } from "./lib/report.ts";
import { flags } from "./lib/stats.ts";
import { cpuSplit, sampleCpu } from "./lib/system-cpu.ts";

const BENCH = "bench:replicas";
const PG_ROW = "postgres (bench database backends)";
// Shared with whatever else runs on the machine: an upper bound.
const REDIS_ROW = "redis-server (shared)";
const CPU_COLUMNS = [...FLEET_SERVICES, "postgres", "redis"];
const f = flags();
const seconds = f.num("seconds", 30);
const connections = f.num("connections", 16);
const rollRate = f.num("roll-rate", 20);
const rollBig = f.num("roll-big", 4);
const ENDPOINT_LIMIT = 4;
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const counts = (arg("replicas") ?? "1,2,3").split(",").map(Number);

header(
  BENCH,
  `replicas ${counts.join(",")} of each of ${FLEET_SERVICES.join(", ")}; ${connections} connections for ${seconds} s of 10 KB; ` +
    `roll at N=2: ${rollRate} msg/s + ${rollBig} × 5 MB uploads in progress; endpoint limit ${ENDPOINT_LIMIT}`,
);

type Trial = { n: number; report: FleetReport; acceptRate: number; deliverRate: number; cpu: Record<string, number> };

/** A fresh address with its own endpoint on the receiver, so each trial's arrivals are its own. */
async function seedTrial(env: BenchEnv, receiver: CountingReceiver, name: string): Promise<string> {
  const d = await seedDomain(env.prisma, `${name}.replicas.example`, { plan: "scale" });
  const endpointId = await seedEndpoint(env.prisma, d.accountId, `${receiver.url}/${name}`);
  await seedAddress(env.prisma, d, "in", { endpointId });
  return `in@${name}.replicas.example`;
}

const withoutHealthPort = ({ HEALTH_PORT: _, ...rest }: Record<string, string>) => rest;

function fleetOf(env: BenchEnv, dns: DnsServer, n: number): Promise<Fleet> {
  return startFleet({
    // HEALTH_PORT is the fleet's (a spare port per replica, where it waits for /readyz).
    env: {
      ...withoutHealthPort(env.serviceEnv),
      DNS_SERVERS: dns.server,
      LOG_LEVEL: "warn",
      SHUTDOWN_TIMEOUT_MS: "30000",
    },
    replicas: { "smtp-ingest": n, "rule-engine": n, "webhook-dispatcher": n },
    readyTimeoutMs: 900_000,
    serviceEnv: {
      "smtp-ingest": { SMTP_MAX_CONNECTIONS_PER_IP: "500" },
      "webhook-dispatcher": {
        ALLOW_PRIVATE_DESTINATIONS: "true",
        DISPATCHER_ENDPOINT_CONCURRENCY: String(ENDPOINT_LIMIT),
      },
    },
  });
}

const cpuByService = (fleet: Fleet): Record<string, number> =>
  Object.fromEntries(
    FLEET_SERVICES.map((s: FleetService) => [
      s,
      fleet.replicas.filter((r) => r.service === s).reduce((sum, r) => sum + treeCpuMs(r.proc.child.pid ?? 0), 0),
    ]),
  );

/** `connections` senders, each one message per session back to back, for `seconds`. */
async function closedLoop(fleet: Fleet, to: string, tag: string): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const until = performance.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const ports = fleet.smtpPorts();
        const port = ports[n % ports.length] ?? 0;
        outcomes.push(await sendMessage(port, { tag: `${tag}-${n++}`, to, bytes: 10_000, big: false }));
      }
    }),
  );
  return outcomes;
}

async function throughputTrial(env: BenchEnv, dns: DnsServer, receiver: CountingReceiver, n: number): Promise<Trial> {
  const to = await seedTrial(env, receiver, `n${n}`);
  const fleet = await fleetOf(env, dns, n);
  try {
    const database = new URL(env.databaseUrl).pathname.slice(1);
    const sys0 = sampleCpu(process.pid, [], database);
    const cpu0 = cpuByService(fleet);
    const t0 = performance.now();
    const outcomes = await closedLoop(fleet, to, `n${n}`);
    const sent = performance.now();
    await waitSettled(env.prisma, { url: env.redisUrl, prefix: env.redisPrefix }, outcomes, receiver, 600_000);
    const cpu1 = cpuByService(fleet);
    const sys = cpuSplit(sys0, sampleCpu(process.pid, [], database));
    const report = await fleetReport(env.prisma, outcomes, receiver);
    const accepted = outcomes.filter((o) => o.code === 250);
    const lastArrival = Math.max(
      ...accepted.map((o) => Math.min(...(receiver.arrivals.get(o.tag) ?? []).map((a) => a.at))),
    );
    const per = (ms: number) => ms / Math.max(1, report.accepted);
    const cpu = {
      ...Object.fromEntries(FLEET_SERVICES.map((s) => [s, per((cpu1[s] ?? 0) - (cpu0[s] ?? 0))])),
      postgres: per(sys.get(PG_ROW) ?? 0),
      redis: per(sys.get(REDIS_ROW) ?? 0),
    };
    return {
      n,
      report,
      acceptRate: (report.accepted * 1000) / (sent - t0),
      deliverRate: (report.accepted * 1000) / (lastArrival - t0),
      cpu,
    };
  } finally {
    await fleet.close();
  }
}

async function rollTrial(env: BenchEnv, dns: DnsServer, receiver: CountingReceiver): Promise<FleetReport> {
  const to = await seedTrial(env, receiver, "roll");
  const fleet = await fleetOf(env, dns, 2);
  try {
    const big = { bigBytes: 5 * 1024 * 1024, bigPaceMs: 8_000 };
    const load = startLoad(
      { ports: () => fleet.smtpPorts(), to, ratePerSec: rollRate, smallBytes: 10_000, bigInProgress: rollBig, ...big },
      "roll",
    );
    // A steady state first: the latency of the roll is compared with it.
    await new Promise((r) => setTimeout(r, 15_000));
    const rolled = await rollUnderLoad(fleet, load, {
      to,
      bytes: big.bigBytes,
      paceMs: big.bigPaceMs,
      tag: "roll-upload",
    });
    await waitSettled(env.prisma, { url: env.redisUrl, prefix: env.redisPrefix }, rolled.outcomes, receiver, 600_000);
    const stops = rolled.stopped.map(
      (s) =>
        `${s.name} exit ${s.code} after ${fmt((s.exitedAt - s.signalledAt) / 1000)} s, ${s.handedBack} handed back`,
    );
    console.log(`stopped: ${stops.join("; ")}`);
    console.log(
      `jobs found stalled (lock lapsed): ${await stalledJobs({ url: env.redisUrl, prefix: env.redisPrefix })}`,
    );
    const steady = latencyIn(rolled.outcomes, receiver, [0, rolled.window[0]]);
    console.log(`before the roll: p50 ${fmt(steady.p50)} ms, p99 ${fmt(steady.p99)} ms (n ${steady.n})`);
    for (const p of rolled.phases) {
      const l = latencyIn(rolled.outcomes, receiver, p.window);
      const s = (p.window[1] - p.window[0]) / 1000;
      console.log(
        `rolling ${p.service} (${fmt(s)} s): p50 ${fmt(l.p50)} ms, p99 ${fmt(l.p99)} ms, max ${fmt(l.max)} ms`,
      );
    }
    return fleetReport(env.prisma, rolled.outcomes, receiver, rolled.window);
  } finally {
    await fleet.close();
  }
}

const env = await benchEnv(BENCH);
const dns = await startDnsServer({});
const receiver = await startCountingReceiver(20);
try {
  const trials: Trial[] = [];
  for (const n of counts) {
    const t = await throughputTrial(env, dns, receiver, n);
    console.log(`N=${n}: ${describeReport(t.report)}`);
    trials.push(t);
  }
  table(
    [
      "replicas",
      "250s",
      "accepted/s",
      "delivered/s",
      "p50 ms",
      "p99 ms",
      "lost",
      "twice",
      "max in flight",
      ...CPU_COLUMNS.map((s) => `${s} CPU ms/msg`),
    ],
    trials.map((t) => [
      t.n,
      t.report.accepted,
      t.acceptRate,
      t.deliverRate,
      t.report.latency.p50,
      t.report.latency.p99,
      t.report.lost,
      t.report.storedTwice + t.report.twoDeliveryIds,
      Math.max(...Object.values(t.report.maxConcurrent)),
      ...CPU_COLUMNS.map((s) => fmt(t.cpu[s] ?? Number.NaN, 2)),
    ]),
  );
  if (!process.argv.includes("--no-roll")) {
    const r = await rollTrial(env, dns, receiver);
    console.log(`\nrolling restart, N=2: ${describeReport(r)}`);
    for (const c of r.cut) console.log(`  cut: ${c.tag} on ${c.port}: ${c.reply}`);
  }
} finally {
  await receiver.close();
  await dns.close();
  await env.close();
  footer();
}
