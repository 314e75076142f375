// bench:e2e — SMTP 250 → webhook arrival, with every service as its own process, started as an
// operator starts them (scripts/start-all.ts) on a fresh database. Offered loads of 10 and 50 msg/s
// (open loop) and saturation (closed loop, 20 connections), each with a fast and a slow (50 ms per
// answer) loopback DNS server that serves the senders' SPF, DKIM and DMARC records; the bench
// messages are DKIM-signed, so the rule engine does the lookups a real sender costs. Each trial
// mails from fresh sender domains, so a DNS cache starts cold and only repeats within a trial hit it.
// Per-stage breakdown from the rows' own timestamps.
// CPU ms per message of every process involved (each service, the bench database's Postgres
// backends, Postgres's shared processes, redis-server, the bench itself), read from /proc around
// each trial: the breakdown that says which component sets the ceiling. `--loads saturation` runs
// only the saturation trials; `--cpu-prof DIR` makes every service write a V8 CPU profile there on exit.
// Neighbour trials (`--loads flood,poison`, bench/lib/neighbours.ts): another account sends a flood
// of `--flood` messages, or `--poison` messages that fail every processing try, while the bench's
// account sends a probe every 1/`--probe-rate` s; the probes' delay is what the neighbour costs.
// Run: npm run -s bench:e2e [-- --seconds 60 --saturation 1000 --rounds 1 --domains 10 --slow-ms 50
//                             --loads 10,50,saturation,flood,poison --flood 5000 --poison 520
//                             --probe-rate 5 --cpu-prof DIR]
import { generateKeyPairSync } from "node:crypto";
import { performance } from "node:perf_hooks";
import {
  type DnsServer,
  seedAddress,
  seedDomain,
  seedEndpoint,
  sparePort,
  startDnsServer,
  startReceiver,
} from "@mailroom/testing";
import { dkimSign } from "mailauth";
import { benchEnv } from "./lib/env.ts";
import { interleave, medianOf } from "./lib/interleave.ts";
import { type NeighbourKind, type NeighbourResult, neighbourTrial } from "./lib/neighbours.ts";
import { descendantsRunning, memoryMB, startNode, stopAll, waitForPort } from "./lib/procs.ts";
import { fmt, footer, header, load, ratio, table } from "./lib/report.ts";
import { closedLoop, type Envelope, type LoadResult, openLoop } from "./lib/smtp-load.ts";
import { flags, latency } from "./lib/stats.ts";
import { type CpuSample, cpuSplit, sampleCpu, THREAD_ROW } from "./lib/system-cpu.ts";

const BENCH = "bench:e2e";
const f = flags();
const seconds = f.num("seconds", 60);
const saturation = f.num("saturation", 1000);
const rounds = f.num("rounds", 1);
const domainsPerTrial = f.num("domains", 10);
const slowMs = f.num("slow-ms", 50);
const floodCount = f.num("flood", 5000);
const poisonCount = f.num("poison", 520);
const probeRate = f.num("probe-rate", 5);
/** A `--name value` string option (flags() reads numbers and switches only). */
const str = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const loadsWanted = (str("loads") ?? "10,50,saturation").split(",");
const cpuProfDir = str("cpu-prof");
const DOMAIN = "bench-e2e.example";
const NEIGHBOUR_DOMAIN = "neighbour.bench-e2e.example";
const SERVICES = ["api", "smtp-ingest", "rule-engine", "webhook-dispatcher", "domain-verifier", "outbound-sender"];

header(
  BENCH,
  `offered 10 and 50 msg/s for ${seconds} s, saturation ${saturation} messages over 20 connections; ` +
    `DNS fast vs ${slowMs} ms per answer; ${domainsPerTrial} sender domains per trial; ${rounds} round(s)`,
);

const env = await benchEnv(BENCH);
const dns = await startDnsServer();
// Real senders publish TTLs of minutes; the server's default of 0 would forbid any cache.
(dns as DnsServer & { setTtl?: (s: number) => void }).setTtl?.(300);
// …and their NXDOMAIN answers carry an SOA, as real authoritative servers' do: DMARC's tree walk
// asks `_dmarc.` of every parent domain, and without an SOA those answers may not be cached, so
// the slow-resolver run would measure four uncached lookups per message that real mail never costs.
dns.setNegativeTtl(300);
const receiver = await startReceiver();
try {
  const d = await seedDomain(env.prisma, DOMAIN, { plan: "scale" });
  const endpointId = await seedEndpoint(env.prisma, d.accountId, `${receiver.url}/hook`);
  await seedAddress(env.prisma, d, "in", { endpointId });
  // Another account, whose flood (or poison backlog) the neighbour trials send.
  const nd = await seedDomain(env.prisma, NEIGHBOUR_DOMAIN, { plan: "scale" });
  const neighbourEndpoint = await seedEndpoint(env.prisma, nd.accountId, `${receiver.url}/neighbour`);
  await seedAddress(env.prisma, nd, "in", { endpointId: neighbourEndpoint });
  const [smtpPort, apiPort] = [await sparePort(), await sparePort()];
  const stack = startNode("start-all", "scripts/start-all.ts", {
    ...env.serviceEnv,
    LOG_LEVEL: "warn",
    SMTP_PORT: String(smtpPort),
    SMTP_HOST: "127.0.0.1",
    SMTP_MAX_CONNECTIONS_PER_IP: "100",
    API_PORT: String(apiPort),
    API_HOST: "127.0.0.1",
    DNS_SERVERS: dns.server,
    ALLOW_PRIVATE_DESTINATIONS: "true",
    ...(cpuProfDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${cpuProfDir}` } : {}),
  });
  const database = new URL(env.databaseUrl).pathname.slice(1);
  // The floor (bench/e2e/floor.ts): one process doing the least the contract needs, same database.
  const floorWanted = loadsWanted.includes("floor");
  const floorPort = await sparePort();
  const floor = floorWanted
    ? startNode("floor", "bench/e2e/floor.ts", {}, [String(floorPort), env.databaseUrl, `${receiver.url}/floor`])
    : null;
  const cpuNow = (): CpuSample => sampleCpu(stack.pid, SERVICES, database, floor ? { floor: floor.pid } : {});
  await Promise.all([
    waitForPort(smtpPort, "smtp-ingest"),
    waitForPort(apiPort, "api"),
    floor ? waitForPort(floorPort, "floor") : undefined,
  ]);

  // Who got what: the subject carries the trial tag and the message's number.
  const arrivals = new Map<string, number>();
  receiver.respond((req) => {
    const subject = (JSON.parse(req.body.toString()) as { data: { email: { subject: string } } }).data.email.subject;
    arrivals.set(subject, performance.now());
    return { status: 200 };
  });
  receiver.requests.length = 0;

  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const dkimKey = `v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`;
  const body = `${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(12)}\r\n`.repeat(14); // ≈ 10 KB

  let trialNo = 0;
  /** A trial's senders (fresh domains with SPF, DKIM and DMARC records) and its signed messages. */
  async function prepare(tag: string, count: number, to = `in@${DOMAIN}`) {
    const domains = Array.from({ length: domainsPerTrial }, (_, k) => `s${k}.${tag}.sender.bench.test`);
    for (const sd of domains) {
      dns.set(sd, "TXT", ["v=spf1 ip4:127.0.0.1 -all"]);
      dns.set(`bench._domainkey.${sd}`, "TXT", [dkimKey]);
      dns.set(`_dmarc.${sd}`, "TXT", ["v=DMARC1; p=reject"]);
    }
    const envs: Envelope[] = [];
    const messages: Buffer[] = [];
    for (let i = 0; i < count; i++) {
      const sd = domains[i % domains.length] as string;
      const raw =
        `From: Sender <news@${sd}>\r\nTo: <${to}>\r\nSubject: ${tag} ${i}\r\n` +
        `Message-ID: <${tag}.${i}@${sd}>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\n` +
        `Content-Type: text/plain; charset=utf-8\r\n\r\n${body}`;
      const signed = await dkimSign(raw, {
        canonicalization: "relaxed/relaxed",
        signatureData: [{ signingDomain: sd, selector: "bench", privateKey: pem, algorithm: "rsa-sha256" }],
      } as unknown as Parameters<typeof dkimSign>[1]);
      envs.push({ from: `bounce@${sd}`, to });
      messages.push(Buffer.from(signed.signatures + raw));
    }
    return { envs, messages };
  }

  type R = {
    offered: number;
    accepted: number;
    e2eRate: number;
    lat: ReturnType<typeof latency>;
    stages: Record<string, number>;
    /** CPU ms per accepted message, by process group, and the cores the whole trial kept busy. */
    cpu: Record<string, number>;
  };
  async function trial(mode: "fast" | "slow" | "floor", rate: number | "saturation", forSeconds = seconds): Promise<R> {
    const tag = `t${++trialNo}${mode}`;
    const count = rate === "saturation" ? saturation : Math.round(rate * forSeconds);
    const { envs, messages } = await prepare(tag, count);
    dns.setDelay(mode === "slow" ? slowMs : 0);
    const acceptedAt = new Map<number, number>();
    const opts = {
      port: mode === "floor" ? floorPort : smtpPort,
      count,
      env: (i: number) => envs[i] as Envelope,
      message: (i: number) => messages[i] as Buffer,
      onAccepted: (i: number, at: number) => acceptedAt.set(i, at),
    };
    const cpu0 = cpuNow();
    const started = performance.now();
    const sent: LoadResult =
      rate === "saturation"
        ? await closedLoop({ ...opts, connections: 20 })
        : await openLoop({ ...opts, rate, connections: 8 });
    // Everything accepted must arrive; allow a slow pipeline time to drain its backlog.
    const deadline = Date.now() + 120_000 + count * 200;
    const subjects = [...acceptedAt.keys()].map((i) => `${tag} ${i}`);
    while (subjects.some((s) => !arrivals.has(s))) {
      if (Date.now() > deadline) throw new Error(`${tag}: webhooks missing after the deadline`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const lastArrival = Math.max(...subjects.map((s) => arrivals.get(s) as number));
    const cpu = cpuPerMessage(cpu0, cpuNow(), acceptedAt.size, performance.now() - started);
    const lat = latency([...acceptedAt].map(([i, at]) => (arrivals.get(`${tag} ${i}`) as number) - at));
    const stages = mode === "floor" ? {} : await stageBreakdown(tag);
    dns.setDelay(0);
    const r = {
      offered: rate === "saturation" ? Number.NaN : rate,
      accepted: sent.rate,
      e2eRate: acceptedAt.size / ((lastArrival - started) / 1000),
      lat,
      stages,
      cpu,
    };
    console.log(
      `${tag} ${rate === "saturation" ? "saturation" : `${rate} msg/s`}: accepted ${fmt(r.accepted)} msg/s, end to end ${fmt(r.e2eRate)} msg/s, ` +
        `p50 ${fmt(lat.p50)} p99 ${fmt(lat.p99)} max ${fmt(lat.max)} ms — ${load()}`,
    );
    console.log(
      `  CPU ms per message: ${Object.entries(cpu)
        .map(([k, v]) => `${k} ${fmt(v, 2)}`)
        .join(", ")}`,
    );
    return r;
  }

  /** CPU ms per message by process group, plus the total and the cores kept busy over the trial. */
  function cpuPerMessage(before: CpuSample, after: CpuSample, messages: number, wallMs: number) {
    const split = [...cpuSplit(before, after)];
    const processes = split.filter(([k]) => !k.startsWith(THREAD_ROW)).sort((a, b) => b[1] - a[1]);
    // Thread rows of the services that spend something (≥ 0.05 ms per message), by name.
    const threads = split
      .filter(([k, v]) => k.startsWith(THREAD_ROW) && v / messages >= 0.05)
      .sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const total = processes.reduce((a, [, v]) => a + v, 0);
    const out: Record<string, number> = {};
    for (const [k, v] of [...processes, ...threads]) out[k] = v / messages;
    out.total = total / messages;
    out["cores busy"] = total / wallMs;
    return out;
  }

  /** Medians of each stage, in ms, from the rows' own timestamps (the services' clocks are this machine's). */
  async function stageBreakdown(tag: string): Promise<Record<string, number>> {
    const { rows } = await env.pool.query<Record<string, number>>(
      `SELECT
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM e."createdAt" - s."receivedAt") * 1000) AS "rule engine",
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a."startedAt" - d."createdAt") * 1000) AS "delivery queue",
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a."finishedAt" - a."startedAt") * 1000) AS "POST",
         percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM e."createdAt" - s."receivedAt") * 1000) AS "rule engine p99",
         percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM a."startedAt" - d."createdAt") * 1000) AS "delivery queue p99"
       FROM emails e
       JOIN spooled_messages s ON s.id = e."spoolId"
       JOIN deliveries d ON d."emailId" = e.id
       JOIN delivery_attempts a ON a."deliveryId" = d.id AND a.number = 1
       WHERE e.subject LIKE $1`,
      [`${tag} %`],
    );
    return Object.fromEntries(Object.entries(rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
  }

  // Warm-up, not measured: the processes' pools, worker threads and JIT.
  await trial("fast", 20, 5).catch((err) => {
    throw new Error(`warm-up failed: ${(err as Error).message}`);
  });

  // The floor is measured at saturation, beside mailroom's saturation trials.
  const loads = ([10, 50, "saturation"] as const).filter(
    (l) => loadsWanted.includes(String(l)) || (l === "saturation" && floorWanted),
  );
  const floorRatios: (string | number)[][] = [];
  const rows: (string | number)[][] = [];
  const stageRows: (string | number)[][] = [];
  const cpuRows: (string | number)[][] = [];
  for (const rate of loads) {
    const results = await interleave<R>(
      rounds,
      (rate === "saturation" && floorWanted ? (["fast", "slow", "floor"] as const) : (["fast", "slow"] as const)).map(
        (mode) => ({ name: mode, run: () => trial(mode, rate) }),
      ),
    );
    const floorRs = results.get("floor");
    for (const [mode, rs] of floorRs ? results : []) {
      if (mode === "floor") continue;
      floorRatios.push([
        mode === "fast" ? "fast DNS" : `${slowMs} ms/answer`,
        ratio(
          medianOf(rs, (r) => r.e2eRate),
          medianOf(floorRs, (r) => r.e2eRate),
        ),
        ratio(
          medianOf(floorRs, (r) => r.cpu.total ?? Number.NaN),
          medianOf(rs, (r) => r.cpu.total ?? Number.NaN),
        ),
      ]);
    }
    for (const [mode, rs] of results) {
      const label = rate === "saturation" ? "saturation (20 conns)" : `${rate} msg/s offered`;
      const dnsLabel = mode === "fast" ? "fast" : mode === "floor" ? "floor (no DNS)" : `${slowMs} ms/answer`;
      rows.push([
        label,
        dnsLabel,
        medianOf(rs, (r) => r.accepted),
        medianOf(rs, (r) => r.e2eRate),
        medianOf(rs, (r) => r.lat.p50),
        medianOf(rs, (r) => r.lat.p95),
        medianOf(rs, (r) => r.lat.p99),
        medianOf(rs, (r) => r.lat.max),
      ]);
      const keys = Object.keys(rs[0]?.stages ?? {});
      stageRows.push([label, dnsLabel, ...keys.map((k) => medianOf(rs, (r) => r.stages[k] ?? Number.NaN))]);
      for (const k of Object.keys(rs[0]?.cpu ?? {})) {
        cpuRows.push([
          label,
          dnsLabel,
          k,
          fmt(
            medianOf(rs, (r) => r.cpu[k] ?? Number.NaN),
            2,
          ),
        ]);
      }
    }
  }
  // Neighbour trials (fast DNS): the bench's account probed while another account's backlog is pending.
  const kinds = (["flood", "poison"] as const).filter((k) => loadsWanted.includes(k));
  const neighbourRows: (string | number)[][] = [];
  const neighbours = {
    smtpPort,
    pool: env.pool,
    arrivals,
    neighbour: { accountId: nd.accountId, to: `in@${NEIGHBOUR_DOMAIN}` },
    probeTo: `in@${DOMAIN}`,
    prepare,
  };
  for (const kind of kinds) {
    const count = kind === "flood" ? floodCount : poisonCount;
    const results = await interleave<NeighbourResult>(rounds, [
      {
        name: kind,
        run: () => neighbourTrial(neighbours, kind as NeighbourKind, `t${++trialNo}${kind}`, count, probeRate),
      },
    ]);
    const rs = results.get(kind) ?? [];
    neighbourRows.push([
      `${kind} of ${count} (${kind === "flood" ? "ordinary" : "failing every try"})`,
      medianOf(rs, (r) => r.backlogSeconds),
      medianOf(rs, (r) => r.probes.n),
      medianOf(rs, (r) => r.probes.p50),
      medianOf(rs, (r) => r.probes.p99),
      medianOf(rs, (r) => r.probes.max),
      medianOf(rs, (r) => r.probesStored.p50),
      medianOf(rs, (r) => r.probesStored.p99),
    ]);
  }

  console.log("\nEnd to end: SMTP 250 → webhook received (ms); rates in msg/s; medians of the rounds");
  table(["load", "DNS", "SMTP accepted", "end to end", "p50", "p95", "p99", "max"], rows);
  if (floorRatios.length) {
    console.log(
      "\nmailroom ÷ the floor at saturation (rate: mailroom's ÷ the floor's; CPU: the floor's per message ÷ mailroom's)",
    );
    table(["mailroom", "end-to-end rate ÷ floor", "floor CPU ÷ mailroom CPU"], floorRatios);
  }
  if (neighbourRows.length) {
    console.log(
      `\nAnother account's backlog: the bench account's probes (${probeRate}/s) while it is pending (ms; medians of the rounds)`,
    );
    table(
      ["neighbour", "backlog s", "probes", "250 → webhook p50", "p99", "max", "spool → stored p50", "p99"],
      neighbourRows,
    );
  }
  console.log("\nStages, medians from row timestamps (ms): spooled → stored, stored → attempt started, POST");
  table(
    ["load", "DNS", "rule engine p50", "delivery queue p50", "POST p50", "rule engine p99", "delivery queue p99"],
    stageRows,
  );
  console.log(
    "\nCPU ms per accepted message by process (medians of the rounds; 'cores busy': all of them ÷ wall time)",
  );
  table(["load", "DNS", "process", "CPU ms / message"], cpuRows);
  console.log("\nPeak memory (VmHWM) of each service process:");
  table(
    ["service", "peak MB", "now MB"],
    SERVICES.flatMap((s) =>
      descendantsRunning(stack.pid, `services/${s}/src/main.ts`).map((pid) => {
        const m = memoryMB(pid);
        return [s, m.peak, m.now];
      }),
    ),
  );
  footer();
} finally {
  await stopAll();
  await receiver.close();
  await dns.close();
  await env.close();
}
