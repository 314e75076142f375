// The image's HEALTHCHECK: GET /healthz on the health port of what this container runs, read from
// PID 1's command line — one service (HEALTH_PORT_<SERVICE>, HEALTH_PORT or its default), or every
// service under start-all (HEALTH_PORT as a base there: start-all's own rule, sharedHostEnv). Exit 0
// only when each answers 200 within 3 s.
import { readFileSync } from "node:fs";
import { HEALTH_PORTS, healthPortOf, sharedHostEnv } from "@mailroom/config";

type Service = keyof typeof HEALTH_PORTS;

function servicesOfContainer(): Service[] {
  let argv: string[] = [];
  try {
    argv = readFileSync("/proc/1/cmdline", "utf8").split("\0");
  } catch {
    // Not Linux, or no /proc: check every default port.
  }
  const named = argv
    .map((arg) => /(?:^|\/)services\/([a-z-]+)\/src\/main\.[jt]s$/.exec(arg)?.[1])
    .find((name): name is Service => name !== undefined && name in HEALTH_PORTS);
  return named ? [named] : (Object.keys(HEALTH_PORTS) as Service[]);
}

const services = servicesOfContainer();
const portOf = (s: Service) =>
  healthPortOf(s, services.length === 1 ? process.env : sharedHostEnv(s, process.env)).port;
const results = await Promise.all(
  services.map((s) =>
    fetch(`http://127.0.0.1:${portOf(s)}/healthz`, { signal: AbortSignal.timeout(3_000) }).then(
      (r) => (r.ok ? null : `${s}: HTTP ${r.status}`),
      (err: Error) => `${s}: ${err.message}`,
    ),
  ),
);
const failed = results.filter((r) => r !== null);
if (failed.length) {
  console.error(`unhealthy: ${failed.join("; ")}`);
  process.exit(1);
}
