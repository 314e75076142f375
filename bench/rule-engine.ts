// bench:rule-engine — what one email costs the rule engine, measured where it is spent (issue 13):
// N DKIM-signed 10 KB messages are spooled over SMTP with the engine stopped, then the engine
// (startRuleEngine, wired as main.ts wires it, concurrency as configured) drains the backlog against
// a loopback DNS server with the senders' SPF/DKIM/DMARC records (cache warm after the first few).
// Prints the drain rate, CPU ms per email (this process and its parser threads), SQL statements and
// round trips per email (every query through node-postgres, Prisma's included; queries sent
// together on a pipelined connection count as one round trip), the CPU the bench database's
// Postgres backends and redis-server spent meanwhile (redis-server is shared: other users of it on
// the machine count too), and with --profile writes a CPU profile of the drain only and prints
// where its self time goes by package. With --trace the engine exports its spans (OpenTelemetry,
// OTLP/HTTP JSON) to a loopback sink that reads and drops them: what tracing costs when it is on.
// Run: npm run -s bench:rule-engine [-- --messages 600 --concurrency 4 --profile --trace]
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { poolOf } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { seedAddress, seedDomain, seedEndpoint, startDnsServer } from "@mailroom/testing";
import globalSetup from "@mailroom/testing/global-setup";
import globalTeardown from "@mailroom/testing/global-teardown";
import { startTracing, type TracingSettings } from "@mailroom/tracing";
import { dkimSign } from "mailauth";
import pg from "pg";
import { createParser } from "../services/rule-engine/src/parse.ts";
import { createDnsResolve } from "../services/rule-engine/src/resolver.ts";
import { unconfiguredVirusScanner } from "../services/rule-engine/src/virus.ts";
import { startRuleEngine } from "../services/rule-engine/src/worker.ts";
import { startPipeline } from "../services/rule-engine/test/pipeline.ts";
import { fmt, footer, header, load, table } from "./lib/report.ts";
import { closedLoop } from "./lib/smtp-load.ts";
import { flags } from "./lib/stats.ts";
import { cpuSplit, sampleCpu } from "./lib/system-cpu.ts";

const f = flags();
const messages = f.num("messages", 600);
const concurrency = f.num("concurrency", 4);
const profile = f.has("profile");
const traced = f.has("trace");
const SENDERS = 10;
const DOMAIN = "bench-re.example";

header(
  "bench:rule-engine — drain of a spooled backlog",
  `${messages} messages, concurrency ${concurrency}${traced ? ", spans exported (--trace)" : ""}`,
);
await globalSetup();
const p = await startPipeline({ engine: false });
const records: Record<string, { TXT: string[] }> = {};
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
for (let i = 0; i < SENDERS; i++) {
  records[`s${i}.sender.test`] = { TXT: ["v=spf1 ip4:127.0.0.1 -all"] };
  records[`bench._domainkey.s${i}.sender.test`] = {
    TXT: [`v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`],
  };
  records[`_dmarc.s${i}.sender.test`] = { TXT: ["v=DMARC1; p=reject"] };
}
const dns = await startDnsServer(records);
dns.setTtl(300);
// NXDOMAIN with an SOA, as real servers answer: DMARC's walk up the parent domains is then cached too.
dns.setNegativeTtl(300);
try {
  const d = await seedDomain(p.prisma, DOMAIN, { plan: "scale" });
  const endpointId = await seedEndpoint(p.prisma, d.accountId, "http://127.0.0.1:9/hook");
  await seedAddress(p.prisma, d, "in", { endpointId });
  const body = `${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(12)}\r\n`.repeat(14);
  const signed = await Promise.all(
    Array.from({ length: messages }, async (_, i) => {
      const sd = `s${i % SENDERS}.sender.test`;
      const raw =
        `From: Sender <news@${sd}>\r\nTo: <in@${DOMAIN}>\r\nSubject: re ${i}\r\nMessage-ID: <re.${i}@${sd}>\r\n` +
        `Date: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}`;
      const s = await dkimSign(raw, {
        canonicalization: "relaxed/relaxed",
        signatureData: [{ signingDomain: sd, selector: "bench", privateKey: pem, algorithm: "rsa-sha256" }],
      } as unknown as Parameters<typeof dkimSign>[1]);
      return Buffer.from(s.signatures + raw);
    }),
  );
  const sent = await closedLoop({
    port: p.ingest.port,
    connections: 8,
    count: messages,
    env: (i) => ({ from: `bounce@s${i % SENDERS}.sender.test`, to: `in@${DOMAIN}` }),
    message: (i) => signed[i] as Buffer,
  });
  console.log(`spooled ${sent.sent} messages (${sent.failed} refused) — ${load()}`);

  // Every statement any pool of this process sends (Prisma's adapter included) goes through here.
  let statements = 0;
  // Queries sent together on a pipelined connection (the store transaction: issued in one
  // synchronous run, so within one tick) are one round trip.
  let roundTrips = 0;
  const burst = new WeakSet<pg.Client>();
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    statements++;
    if ((this as pg.Client & { pipeline?: boolean }).pipeline !== true) roundTrips++;
    else if (!burst.has(this)) {
      roundTrips++;
      burst.add(this);
      queueMicrotask(() => burst.delete(this));
    }
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;

  const session = new Session();
  if (profile) {
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 500 });
    await session.post("Profiler.start");
  }
  const database = new URL(p.env.databaseUrl).pathname.slice(1);
  const servers0 = sampleCpu(process.pid, [], database);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  // As main.ts wires it: one parser thread per job the engine runs at once.
  const parser = createParser({ threads: concurrency });
  const tracing = traced
    ? await startTracing("rule-engine", traceSettings(await spanSink()), createLogger("bench", "warn"))
    : undefined;
  const engine = startRuleEngine({
    prisma: p.prisma,
    parser,
    logger: createLogger("bench", "warn"),
    deliveryQueue: p.deliveryQueue,
    inboundQueue: p.queue,
    connection: p.workerRedis,
    prefix: p.env.redisPrefix,
    concurrency,
    sweepIntervalMs: 3_600_000,
    resolver: createDnsResolve([dns.server]),
    mtaHostname: "mx.bench.test",
    // CLAMD_URL unset, as service.ts wires it: a constant GRAY verdict and a counter.
    virus: unconfiguredVirusScanner(),
    ...(tracing ? { tracing } : {}),
  });
  let polls = 0;
  for (;;) {
    polls++;
    const { rows } = await poolOf(p.prisma).query<{ n: number }>(
      `SELECT count(*)::int AS n FROM spool_recipients WHERE status = 'pending'`,
    );
    if (rows[0]?.n === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const servers = cpuSplit(servers0, sampleCpu(process.pid, [], database));
  const stmts = statements - polls; // not the engine's
  const trips = roundTrips - polls;
  await engine.close();
  await parser.close();
  await tracing?.shutdown();
  if (profile) {
    const { profile: prof } = await session.post("Profiler.stop");
    const file = `rule-engine-${Date.now()}.cpuprofile`;
    writeFileSync(file, JSON.stringify(prof));
    console.log(`CPU profile of the drain: ${file}`);
    printProfile(prof);
  }
  const stored = await p.prisma.email.count();
  table(
    [
      "emails stored",
      "drain (emails/s)",
      "CPU ms / email",
      "SQL statements / email",
      "round trips / email",
      "Postgres CPU ms / email",
      "Redis CPU ms / email",
      "wall s",
    ],
    [
      [
        stored,
        fmt(stored / seconds),
        fmt((cpu.user + cpu.system) / 1000 / stored, 2),
        fmt(stmts / stored, 1),
        fmt(trips / stored, 1),
        fmt((servers.get("postgres (bench database backends)") ?? 0) / stored, 2),
        fmt((servers.get("redis-server (shared)") ?? 0) / stored, 2),
        fmt(seconds),
      ],
    ],
  );
} finally {
  await dns.close();
  await p.stop();
  await globalTeardown();
  footer();
}

/** A loopback OTLP/HTTP endpoint that reads each export and answers 200 without decoding it. */
async function spanSink(): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  server.unref();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The services' defaults (packages/config tracingEnv), exporting to `endpoint`. */
function traceSettings(endpoint: string): TracingSettings {
  return {
    OTEL_SDK_DISABLED: false,
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: "parentbased_always_on",
    OTEL_BSP_SCHEDULE_DELAY: 5_000,
    OTEL_BSP_EXPORT_TIMEOUT: 30_000,
    OTEL_BSP_MAX_QUEUE_SIZE: 2_048,
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 512,
  };
}

type Node = { id: number; callFrame: { url: string; functionName: string }; hitCount?: number };

/** Self time by package (node_modules/<name>, node: internals, the repository's own code). */
function printProfile(prof: { nodes: Node[]; samples?: number[] }): void {
  const total = prof.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0);
  const by = new Map<string, number>();
  for (const n of prof.nodes) {
    const url = n.callFrame.url;
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    const key = m
      ? m[1]!
      : url.startsWith("node:")
        ? "node internals"
        : url
          ? `mailroom ${url.replace(/^.*\/(services|packages)\//, "$1/")}`
          : `(${n.callFrame.functionName || "native"})`;
    by.set(key, (by.get(key) ?? 0) + (n.hitCount ?? 0));
  }
  const rows = [...by]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([k, v]) => [k, `${fmt((100 * v) / total)} %`]);
  console.log("\nMain thread self time during the drain (parser threads not included):");
  table(["where", "share"], rows);
}
