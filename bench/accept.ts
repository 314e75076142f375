// bench:accept — how fast mailroom's smtp-ingest says 250, against what the hardware allows:
//   mailroom   the real service process (services/smtp-ingest/src/main.ts) on a fresh database;
//   fsync      a bare smtp-server that writes each message to a file and fsyncs it before 250;
//   pg-insert  a bare smtp-server that INSERTs the raw bytes into Postgres in one transaction;
//   postfix    Postfix accepting into a private queue (held there: nothing is delivered).
// Load from Postfix's smtp-source and from a Node generator with latency percentiles; 1 and 20
// connections; 10 KB and 100 KB. Interleaved rounds, medians, ratios to mailroom. CPU per message
// of each server process and of the Postgres backends it uses; at one connection, where each
// message's time goes (MAIL, RCPT, DATA and the data, each until its reply).
// Run: npm run -s bench:accept [-- --rounds 3 --long --profile]
//   --profile: smtp-ingest runs under `node --cpu-prof`; the .cpuprofile path is printed at the end.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { seedAddress, seedDomain, sparePort } from "@mailroom/testing";
import { POSTFIX, startPostfixRelay } from "../services/smtp-ingest/test/postfix.ts";
import { benchEnv } from "./lib/env.ts";
import { interleave, medianOf } from "./lib/interleave.ts";
import { memoryMB, startNode, startService, stopAll, treeCpuMs, waitForPort } from "./lib/procs.ts";
import { fmt, footer, header, load, ratio, table } from "./lib/report.ts";
import { closedLoop, closeSmtp, openSmtp, plainMessage } from "./lib/smtp-load.ts";
import { flags, median, percentile } from "./lib/stats.ts";
import { ensureDebianTool } from "./lib/tools.ts";

const run = promisify(execFile);
const BENCH = "bench:accept";
const f = flags();
const long = f.has("long");
const rounds = f.num("rounds", long ? 5 : 3);
const scale = f.num("scale", long ? 5 : 1);
const profileDir = f.has("profile") ? mkdtempSync(join(tmpdir(), "mailroom-accept-profile-")) : undefined;
const SMTP_SOURCE = "/usr/sbin/smtp-source";
const DOMAIN = "bench-accept.example";
const envelope = { from: "load@sender.bench.test", to: `in@${DOMAIN}` };
const APP = { mailroom: "bench-accept-mailroom", pgSink: "bench-accept-pg-sink" };

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
  // Each server's Postgres connections carry its name (node-postgres reads PGAPPNAME), so the CPU of
  // its own backends can be told apart from the other's: both use the bench database.
  const ingest = startService("smtp-ingest", {
    ...env.serviceEnv,
    PGAPPNAME: APP.mailroom,
    ...(profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
    SMTP_PORT: String(pMailroom),
    SMTP_HOST: "127.0.0.1",
    SMTP_MAX_CONNECTIONS_PER_IP: "100",
  });
  const fsync = startNode("fsync sink", "bench/accept/sink.ts", {}, ["fsync", String(pFsync), spoolDir]);
  const pgSink = startNode("pg sink", "bench/accept/sink.ts", { PGAPPNAME: APP.pgSink }, [
    "pg",
    String(pPg),
    env.databaseUrl,
  ]);
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
    { name: "mailroom smtp-ingest", port: pMailroom, pid: ingest.pid, app: APP.mailroom },
    { name: "bare smtp-server + fsync", port: pFsync, pid: fsync.pid, app: "" },
    { name: "bare smtp-server + pg INSERT", port: pPg, pid: pgSink.pid, app: APP.pgSink },
    { name: "postfix (private queue)", port: postfix.port, pid: postfixPid, app: "" },
  ];
  /** CPU ms so far of the Postgres backends serving `app` (none: 0). */
  const backendsCpuMs = async (app: string) => {
    if (!app) return 0;
    const r = await env.pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [
      app,
    ]);
    return r.rows.reduce((sum, row) => sum + treeCpuMs(row.pid), 0);
  };

  type R = { rate: number; p50: number; p99: number; cpuMs: number; pgCpuMs: number };
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

  // Warm-up, not measured: JIT, pools, Postfix's smtpd and cleanup processes. Long enough that the
  // short one-connection trials do not measure a server still being optimised by the JIT.
  for (const c of contenders) await nodeLoad(c.port, 20, 400, 10);

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
              const [cpu0, pg0] = [treeCpuMs(c.pid), await backendsCpuMs(c.app)];
              const r = await drive(c.port, connections, count, kb);
              const pgCpuMs = ((await backendsCpuMs(c.app)) - pg0) / count;
              return { ...r, cpuMs: (treeCpuMs(c.pid) - cpu0) / count, pgCpuMs };
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
            c.app ? medianOf(rs, (r) => r.pgCpuMs).toFixed(2) : "–",
            c === contenders[0] ? "1.00×" : ratio(base, rate),
          ]);
        }
        summary.push(`${kb} KB, ${connections} conn, ${gen}: done (${count} msgs/trial) — ${load()}`);
        console.log(summary.at(-1));
      }
    }
  }
  console.log(
    "\nSMTP accept, medians of the rounds (latency: MAIL → 250 after data; CPU: server process tree; PG CPU: its Postgres backends)",
  );
  table(
    ["size", "conns", "load", "server", "msg/s", "p50 ms", "p99 ms", "CPU ms/msg", "PG CPU ms/msg", "mailroom ÷ this"],
    rows,
  );
  await stepsAtOneConnection(contenders, message(10), Math.round(300 * scale));
  const m = memoryMB(ingest.pid);
  console.log(`\nsmtp-ingest memory: peak ${fmt(m.peak)} MB, now ${fmt(m.now)} MB`);
  footer();
} finally {
  await stopAll();
  if (profileDir)
    console.log(
      `smtp-ingest profile: ${readdirSync(profileDir)
        .map((p) => join(profileDir, p))
        .join(", ")}`,
    );
  await postfix?.stop();
  rmSync(spoolDir, { recursive: true, force: true });
  await env.close();
}

/**
 * One connection, 10 KB: the median time of each step of a message as the client sees it, from
 * sending the command to its reply. With one session nothing overlaps, so the steps add up to the
 * time per message and show where a server waits (a lookup at RCPT, the commit after the data).
 */
async function stepsAtOneConnection(contenders: { name: string; port: number }[], data: Buffer, count: number) {
  const stepNames = ["MAIL", "RCPT", "DATA", "data → 250"] as const;
  const results = await interleave<number[][]>(
    rounds,
    contenders.map((c) => ({ name: c.name, run: () => timeSteps(c.port, data, count) })),
  );
  const rows = contenders.map((c) => {
    const perStep = stepNames.map((_, i) => medianOf(results.get(c.name), (r) => median(r.map((m) => m[i] ?? 0))));
    return [c.name, ...perStep.map((ms) => ms.toFixed(3)), perStep.reduce((a, b) => a + b, 0).toFixed(3)];
  });
  console.log(`\nOne connection, 10 KB, ${count} messages: median ms from each command to its reply`);
  table(["server", ...stepNames, "sum"], rows);
}

async function timeSteps(port: number, data: Buffer, count: number): Promise<number[][]> {
  const c = await openSmtp(port);
  const out: number[][] = [];
  for (let i = 0; i < count; i++) {
    const t = [performance.now()];
    await c.cmd(`MAIL FROM:<${envelope.from}>\r\n`, "250");
    t.push(performance.now());
    await c.cmd(`RCPT TO:<${envelope.to}>\r\n`, "250");
    t.push(performance.now());
    await c.cmd("DATA\r\n", "354");
    t.push(performance.now());
    const reply = c.reply();
    c.socket.write(data);
    c.socket.write("\r\n.\r\n");
    if (!(await reply).startsWith("250")) throw new Error(`message refused on port ${port}`);
    t.push(performance.now());
    out.push(t.slice(1).map((at, i) => at - (t[i] as number)));
  }
  closeSmtp(c);
  return out;
}
