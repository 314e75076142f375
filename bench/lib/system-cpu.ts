// CPU time of everything an end-to-end message costs, split by process: each mailroom service
// (its threads included), the Postgres backends of the bench's own database, Postgres's shared
// processes (WAL writer, checkpointer, … — they also serve any other database on the machine),
// redis-server (shared likewise) and the bench process itself (load generator, receiver, DNS).
// Read from /proc (utime + stime) before and after a trial; a backend that exits in between loses
// its time, so services keep their pools open (they do).
import { readdirSync, readFileSync } from "node:fs";
import { descendantsRunning } from "./procs.ts";

const CLK_TCK = 100; // USER_HZ on Linux

export type CpuSample = Map<string, number>;

function ticksOf(pid: string): { ticks: number; comm: string } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = s.lastIndexOf(")");
    const f = s.slice(close + 2).split(" ");
    return { ticks: Number(f[11]) + Number(f[12]), comm: s.slice(s.indexOf("(") + 1, close) };
  } catch {
    return undefined;
  }
}

function cmdline(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/** Rows that split a service's CPU by thread kind: already counted in the service's own row. */
export const THREAD_ROW = "↳ ";

/**
 * CPU ms of a process's live threads by kind: its main thread, worker threads (the rule engine's
 * parser threads), V8's background threads (GC, compilation) and libuv's pool. A thread that has
 * exited (a recycled parser thread) is missing here but counted in the process's own row.
 */
function threadsOf(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    const t = ticksOf(`${pid}/task/${tid}`);
    if (!t) continue;
    const kind =
      tid === String(pid)
        ? "main thread"
        : t.comm === "WorkerThread"
          ? "worker threads"
          : t.comm.startsWith("V8")
            ? "V8 threads (GC, compiler)"
            : t.comm.startsWith("libuv")
              ? "libuv pool"
              : "other threads";
    out.set(kind, (out.get(kind) ?? 0) + (t.ticks * 1000) / CLK_TCK);
  }
  return out;
}

/**
 * Per-process CPU ms, keyed by pid (summed into groups by `cpuSplit`). `others`: more processes
 * to count, by the row name they go under (e.g. bench:e2e's floor process).
 */
export function sampleCpu(
  stackPid: number,
  services: string[],
  database: string,
  others: Record<string, number> = {},
): CpuSample {
  const out: CpuSample = new Map();
  const add = (k: string, ms: number) => out.set(k, (out.get(k) ?? 0) + ms);
  for (const [name, pid] of Object.entries(others)) {
    const t = ticksOf(String(pid));
    if (t) add(`${name}\t${pid}`, (t.ticks * 1000) / CLK_TCK);
  }
  for (const s of services) {
    for (const pid of descendantsRunning(stackPid, `services/${s}/src/main.ts`)) {
      const t = ticksOf(String(pid));
      if (t) add(`${s}\t${pid}`, (t.ticks * 1000) / CLK_TCK);
      for (const [kind, ms] of threadsOf(pid)) add(`${THREAD_ROW}${s}: ${kind}\t${pid}`, ms);
    }
  }
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    const t = ticksOf(pid);
    if (!t) continue;
    const ms = (t.ticks * 1000) / CLK_TCK;
    if (t.comm === "redis-server") add(`redis-server (shared)\t${pid}`, ms);
    else if (t.comm === "postgres" || cmdline(pid).startsWith("postgres")) {
      const line = cmdline(pid);
      add(
        line.includes(` ${database} `)
          ? `postgres (bench database backends)\t${pid}`
          : `postgres (shared processes, other databases)\t${pid}`,
        ms,
      );
    }
  }
  const own = process.cpuUsage();
  add(`bench process (SMTP load, receiver, DNS)\t${process.pid}`, (own.user + own.system) / 1000);
  return out;
}

/** CPU ms per group between two samples (processes present in both, or new ones from zero). */
export function cpuSplit(before: CpuSample, after: CpuSample): Map<string, number> {
  const groups = new Map<string, number>();
  for (const [key, ms] of after) {
    const group = key.slice(0, key.indexOf("\t"));
    groups.set(group, (groups.get(group) ?? 0) + ms - (before.get(key) ?? 0));
  }
  return groups;
}
