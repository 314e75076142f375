// `npm start`: every mailroom service as its own child process, the way they run in production,
// on one machine. Logs pass through (JSON lines, one `service` field each). A signal is forwarded
// to all children; if one dies, the others are stopped and the exit code says so. Every child gets
// this environment, with HEALTH_PORT taken as a base (sharedHostEnv): each service's health port
// is HEALTH_PORT_<SERVICE>, or the base plus its offset, so one setting cannot make six servers
// fight over one port.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type HealthService, sharedHostEnv } from "@mailroom/config";

const root = fileURLToPath(new URL("..", import.meta.url));
// Run from the checkout (this file is .ts, services run through tsx) or from the compiled build in
// dist/ (start-all.js, services as compiled .js: what scripts/run.sh and the image start).
const compiled = import.meta.url.endsWith(".js");
const entry = (name: string) => `services/${name}/src/main.${compiled ? "js" : "ts"}`;
const SERVICES: HealthService[] = [
  "api",
  "smtp-ingest",
  "rule-engine",
  "webhook-dispatcher",
  "domain-verifier",
  "outbound-sender",
];
const present = SERVICES.filter((s) => existsSync(`${root}/${entry(s)}`));

const children = new Map<string, ChildProcess>();
let stopping = false;
let exitCode = 0;

function stopAll(signal: NodeJS.Signals) {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill(signal);
  setTimeout(() => process.exit(exitCode || 1), 15_000).unref();
}

for (const name of present) {
  const child = spawn(process.execPath, compiled ? [entry(name)] : ["--import", "tsx", entry(name)], {
    cwd: root,
    stdio: "inherit",
    env: sharedHostEnv(name, process.env),
  });
  children.set(name, child);
  child.on("exit", (code, signal) => {
    children.delete(name);
    if (!stopping) {
      console.error(
        JSON.stringify({
          level: 50,
          service: "start-all",
          msg: `${name} exited (${code ?? signal}); stopping the others`,
        }),
      );
      exitCode = code || 1;
      stopAll("SIGTERM");
    }
    if (children.size === 0) process.exit(exitCode);
  });
}

process.on("SIGINT", () => stopAll("SIGINT"));
process.on("SIGTERM", () => stopAll("SIGTERM"));
