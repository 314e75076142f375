import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { sparePort, waitFor } from "@mailroom/testing";

const root = resolve(import.meta.dirname, "..");

/** One service started from its main.ts as its own process, the way it is deployed. */
export type ServiceProcess = {
  name: string;
  child: ChildProcess;
  /** Its health/metrics port (HEALTH_PORT), on 127.0.0.1. */
  healthUrl: string;
  stdout: () => string;
  stderr: () => string;
  /** stdout parsed as JSON lines (pino); a line that is not JSON throws. */
  logLines: () => Record<string, unknown>[];
  /** GET /metrics, as Prometheus would scrape it. */
  metrics: () => Promise<string>;
  exited: () => Promise<number | null>;
};

/** Spawns `services/<name>/src/main.ts` with a spare HEALTH_PORT on loopback and `env` on top of ours. */
export async function startService(name: string, env: Record<string, string>): Promise<ServiceProcess> {
  const healthPort = await sparePort();
  const child = spawn(process.execPath, ["--import", "tsx", `services/${name}/src/main.ts`], {
    cwd: root,
    env: { ...process.env, HEALTH_PORT: String(healthPort), HEALTH_HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const healthUrl = `http://127.0.0.1:${healthPort}`;
  return {
    name,
    child,
    healthUrl,
    stdout: () => out,
    stderr: () => err,
    logLines: () =>
      out
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    metrics: async () => {
      const res = await fetch(`${healthUrl}/metrics`);
      if (res.status !== 200) throw new Error(`${name} /metrics answered ${res.status}`);
      return res.text();
    },
    exited: () =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve(child.exitCode)
        : new Promise((r) => child.once("exit", (code) => r(code))),
  };
}

/** Waits until the service answers /readyz with 200 (it exiting first fails at once, with its output). */
export function waitReady(p: ServiceProcess, timeoutMs = 120_000): Promise<true> {
  return waitFor(
    async () => {
      if (p.child.exitCode !== null)
        throw new Error(`${p.name} exited ${p.child.exitCode}: ${p.stderr()}${p.stdout()}`);
      return fetch(`${p.healthUrl}/readyz`).then(
        (r) => r.status === 200 || false,
        () => false,
      );
    },
    { what: `${p.name} ready`, timeoutMs, intervalMs: 200 },
  );
}

export async function stopService(p: ServiceProcess): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await p.exited();
}

/**
 * The value of one series in Prometheus text format, matched by name and a subset of its labels;
 * summed when several series match (e.g. every `code` of a counter). 0 when none matches.
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}
