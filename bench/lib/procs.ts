// Processes under test: mailroom services started as an operator starts them (node --import tsx
// services/<name>/src/main.ts, configured by environment), baselines and tools, with their memory
// (VmHWM, the kernel's peak resident set) and CPU time read from /proc.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import { resolve } from "node:path";

export const root = resolve(import.meta.dirname, "../..");
const CLK_TCK = 100; // USER_HZ on Linux

export type Proc = { name: string; child: ChildProcess; pid: number; stop(): Promise<void> };

const running = new Set<Proc>();

/** Starts `node --import tsx <script>` from the repository root with `env` on top of this process's. */
export function startNode(name: string, script: string, env: Record<string, string>, args: string[] = []): Proc {
  return startProcess(name, process.execPath, ["--import", "tsx", script, ...args], env);
}

export const startService = (service: string, env: Record<string, string>): Proc =>
  // HEALTH_PORT 0: an ephemeral health/metrics port, so benches never collide with a running stack.
  startNode(service, `services/${service}/src/main.ts`, { LOG_LEVEL: "warn", HEALTH_PORT: "0", ...env });

export function startProcess(name: string, cmd: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  // A service that dies during a bench says why (its stderr), and the bench stops rather than measure nothing.
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  let stopping = false;
  const proc: Proc = {
    name,
    child,
    pid: child.pid as number,
    async stop() {
      stopping = true;
      running.delete(proc);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(t);
    },
  };
  child.once("exit", (code, signal) => {
    if (!stopping) {
      console.error(`${name} exited unexpectedly (${code ?? signal}):\n${stderr}`);
      process.exitCode = 1;
    }
  });
  running.add(proc);
  return proc;
}

/** Stops everything still running (call in `finally`). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}

/** Peak and current resident set of one process, in MB. */
export function memoryMB(pid: number): { peak: number; now: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (f: string) => Number(new RegExp(`^${f}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
    return { peak: kb("VmHWM") / 1024, now: kb("VmRSS") / 1024 };
  } catch {
    return { peak: Number.NaN, now: Number.NaN };
  }
}

type Stat = { pid: number; ppid: number; cpuTicks: number; comm: string };

function readStat(pid: number): Stat | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = s.lastIndexOf(")");
    const f = s.slice(close + 2).split(" ");
    // Fields after the name: state ppid … utime(12) stime(13) cutime(14) cstime(15), 0-based from state.
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    return { pid, ppid: Number(f[1]), cpuTicks: ticks, comm: s.slice(s.indexOf("(") + 1, close) };
  } catch {
    return undefined;
  }
}

/** Every live process below `pid` (and itself). */
export function tree(pid: number): Stat[] {
  const all = readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readStat(Number(d)))
    .filter((s): s is Stat => s !== undefined);
  const out: Stat[] = [];
  const want = new Set([pid]);
  // Parents are not always listed before children; repeat until no new descendant turns up.
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of all) {
      if (!want.has(s.pid) && want.has(s.ppid)) {
        want.add(s.pid);
        grew = true;
      }
    }
  }
  for (const s of all) if (want.has(s.pid)) out.push(s);
  return out;
}

/** CPU time (user + system, reaped children included) of a process and its live descendants, in ms. */
export const treeCpuMs = (pid: number): number => (tree(pid).reduce((sum, s) => sum + s.cpuTicks, 0) * 1000) / CLK_TCK;

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
export async function waitForPort(port: number, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const s = net.connect({ host: "127.0.0.1", port });
      s.once("connect", () => {
        s.destroy();
        r(true);
      });
      s.once("error", () => r(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} on port ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The live descendants of `pid` whose command line mentions `needle` (e.g. a service's main.ts). */
export function descendantsRunning(pid: number, needle: string): number[] {
  return tree(pid)
    .map((s) => s.pid)
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(needle);
      } catch {
        return false;
      }
    });
}
