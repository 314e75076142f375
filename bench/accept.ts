// bench:accept — how fast mailroom's smtp-ingest says 250, against what the hardware allows:
//   mailroom   the real service process (services/smtp-ingest/src/main.ts) on a fresh database;
//   fsync      a bare smtp-server that writes each message to a file and fsyncs it before 250;
//   pg-insert  a bare smtp-server that INSERTs the raw bytes into Postgres in one transaction;
//   postfix    Postfix accepting into a private queue (held there: nothing is delivered).
// Load from Postfix's smtp-source and from a Node generator with latency percentiles; 1 and 20
// connections; 10 KB and 100 KB. Interleaved rounds, medians, ratios to mailroom.
// Run: npm run -s bench:accept [-- --rounds 3 --long]
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { sparePort } from "@mailroom/testing";
import { seedAddress, seedDomain } from "../services/smtp-ingest/test/harness.ts";
import { POSTFIX, startPostfixRelay } from "../services/smtp-ingest/test/postfix.ts";
import { benchEnv } from "./lib/env.ts";
import { interleave, medianOf } from "./lib/interleave.ts";
import { memoryMB, startNode, startService, stopAll, treeCpuMs, waitForPort } from "./lib/procs.ts";
import { fmt, footer, header, load, ratio, table } from "./lib/report.ts";
import { closedLoop, plainMessage } from "./lib/smtp-load.ts";
import { flags, percentile } from "./lib/stats.ts";
import { ensureDebianTool } from "./lib/tools.ts";

const run = promisify(execFile);
const BENCH = "bench:accept";
const f = flags();
const long = f.has("long");
const rounds = f.num("rounds", long ? 5 : 3);
const scale = f.num("scale", long ? 5 : 1);
const SMTP_SOURCE = "/usr/sbin/smtp-source";
const DOMAIN = "bench-accept.example";
const envelope = { from: "load@sender.bench.test", to: `in@${DOMAIN}` };

ensureDebianTool(POSTFIX, "postfix");
ensureDebianTool(SMTP_SOURCE, "postfix");

header(
  BENCH,
  `${rounds} interleaved rounds; messages per trial ×${scale}; loads: node generator and smtp-source, 1 and 20 connections, 10 KB and 100 KB`,
);

const env = await benchEnv(BENCH);
const spoolDir = mkdtempSync(join(tmpdir(), "mailroom-bench-fsync-"));
let postfix: Awaited<ReturnType<typeof startPostfixRelay>> | undefined;
try {
  // A scale-plan account, so the monthly allotment never refuses bench mail.
  const d = await seedDomain(env.prisma, DOMAIN, { plan: "scale" });
  await seedAddress(env.prisma, d, "in");
  const [pMailroom, pFsync, pPg] = [await sparePort(), await sparePort(), await sparePort()];
  const ingest = startService("smtp-ingest", {
    ...env.serviceEnv,
    SMTP_PORT: String(pMailroom),
    SMTP_HOST: "127.0.0.1",
    SMTP_MAX_CONNECTIONS_PER_IP: "100",
  });
  const fsync = startNode("fsync sink", "bench/accept/sink.ts", {}, ["fsync", String(pFsync), spoolDir]);
  const pgSink = startNode("pg sink", "bench/accept/sink.ts", {}, ["pg", String(pPg), env.databaseUrl]);
  postfix = await startPostfixRelay({
    domains: [DOMAIN],
    ingestPort: 9, // never used: every message is held
    // Accepted mail goes to the hold queue (cleanup has fsynced it before smtpd says 250), so no
    // delivery competes for the CPU; without in-flow tokens from qmgr, in_flow_delay would pause
    // each smtpd for up to 1 s, which is not what accepting costs.
    extraMainCf: [
      "smtpd_recipient_restrictions = check_client_access static:HOLD",
      "in_flow_delay = 0",
      "smtpd_peername_lookup = no",
      "default_process_limit = 200",
      "smtpd_client_connection_count_limit = 0",
    ].join("\n"),
  });
  const postfixPid = Number(readFileSync(join(postfix.dir, "queue/pid/master.pid"), "utf8").trim());
  await Promise.all([
    waitForPort(pMailroom, "smtp-ingest"),
    waitForPort(pFsync, "fsync sink"),
    waitForPort(pPg, "pg sink"),
    waitForPort(postfix.port, "postfix"),
  ]);
  const contenders = [
    { name: "mailroom smtp-ingest", port: pMailroom, pid: ingest.pid },
    { name: "bare smtp-server + fsync", port: pFsync, pid: fsync.pid },
    { name: "bare smtp-server + pg INSERT", port: pPg, pid: pgSink.pid },
    { name: "postfix (private queue)", port: postfix.port, pid: postfixPid },
  ];

  type R = { rate: number; p50: number; p99: number; cpuMs: number };
  const messages = new Map<number, Buffer>();
  const message = (kb: number) => {
    if (!messages.has(kb)) messages.set(kb, plainMessage(envelope, kb * 1024, `bench ${kb} KB`));
    return messages.get(kb) as Buffer;
  };
  const nodeLoad = async (port: number, connections: number, count: number, kb: number) => {
    const r = await closedLoop({ port, connections, count, env: envelope, message: () => message(kb) });
    if (r.failed) throw new Error(`${r.failed} messages refused on port ${port}`);
    return { rate: r.rate, p50: percentile(r.latenciesMs, 50), p99: percentile(r.latenciesMs, 99) };
  };
  const smtpSource = async (port: number, connections: number, count: number, kb: number) => {
    const t0 = performance.now();
    // -d: keep each session open for its next message, as the Node generator does.
    await run(SMTP_SOURCE, [
      ...["-d", "-s", String(connections), "-m", String(count), "-l", String(kb * 1024)],
      ...["-f", envelope.from, "-t", envelope.to, `127.0.0.1:${port}`],
    ]);
    return { rate: count / ((performance.now() - t0) / 1000), p50: Number.NaN, p99: Number.NaN };
  };
  const generators = { node: nodeLoad, "smtp-source": smtpSource };

  // Warm-up, not measured: JIT, pools, Postfix's smtpd and cleanup processes.
  for (const c of contenders) await nodeLoad(c.port, 20, 100, 10);

  const rows: (string | number)[][] = [];
  const summary: string[] = [];
  for (const kb of [10, 100]) {
    for (const connections of [1, 20]) {
      for (const [gen, drive] of Object.entries(generators)) {
        const count = Math.round((connections === 1 ? 300 : 800) * (kb === 100 ? 0.6 : 1) * scale);
        const results = await interleave<R>(
          rounds,
          contenders.map((c) => ({
            name: c.name,
            run: async () => {
              const cpu0 = treeCpuMs(c.pid);
              const r = await drive(c.port, connections, count, kb);
              return { ...r, cpuMs: (treeCpuMs(c.pid) - cpu0) / count };
            },
          })),
        );
        const base = medianOf(results.get(contenders[0]?.name ?? ""), (r) => r.rate);
        for (const c of contenders) {
          const rs = results.get(c.name);
          const rate = medianOf(rs, (r) => r.rate);
          rows.push([
            `${kb} KB`,
            String(connections),
            gen,
            c.name,
            rate,
            medianOf(rs, (r) => r.p50),
            medianOf(rs, (r) => r.p99),
            medianOf(rs, (r) => r.cpuMs).toFixed(2),
            c === contenders[0] ? "1.00×" : ratio(base, rate),
          ]);
        }
        summary.push(`${kb} KB, ${connections} conn, ${gen}: done (${count} msgs/trial) — ${load()}`);
        console.log(summary.at(-1));
      }
    }
  }
  console.log("\nSMTP accept, medians of the rounds (latency: MAIL → 250 after data; CPU: server process tree)");
  table(["size", "conns", "load", "server", "msg/s", "p50 ms", "p99 ms", "CPU ms/msg", "mailroom ÷ this"], rows);
  const m = memoryMB(ingest.pid);
  console.log(`\nsmtp-ingest memory: peak ${fmt(m.peak)} MB, now ${fmt(m.now)} MB`);
  footer();
} finally {
  await stopAll();
  await postfix?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
  await env.close();
}
