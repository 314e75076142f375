import { type HealthPortSource, healthPortOf } from "@mailroom/config";
import type { Logger } from "@mailroom/log";
import { Gauge, type Registry } from "prom-client";
import { createDependencyErrorLog, type DependencyErrorLog } from "./dependency-errors.ts";
import { createHealth, type Health, type ReadinessCheck } from "./health.ts";
import { type HealthServer, startHealthServer } from "./health-server.ts";
import { createRegistry } from "./registry.ts";

export type Observability = {
  registry: Registry;
  health: Health;
  errors: DependencyErrorLog;
  server: HealthServer;
  /** The shutdown step that goes first: readiness turns false while the service drains. */
  drain(): void;
  /** The shutdown step that goes last, so probes see "draining" until the process is done. */
  close(): Promise<void>;
};

/**
 * HEALTH_PORT_<SERVICE>, HEALTH_PORT (0: an ephemeral port, named in the log line) and HEALTH_HOST,
 * from the service's env (@mailroom/config healthEnv, healthPortOf).
 */
export type HealthSettings = HealthPortSource & { HEALTH_HOST: string };

export type ObservabilityOptions = {
  /** Readiness checks known at start; more with `health.addCheck` once their clients exist. */
  checks?: Record<string, ReadinessCheck>;
  /** Window of the dependency-error rate limiter (default 30 s). */
  errorWindowMs?: number;
};

const installed = new WeakMap<Logger, DependencyErrorLog>();

/**
 * Metrics registry, readiness, the dependency-error rate limiter and the health/metrics HTTP port
 * of one service process. Rejects when the port cannot be bound (the caller exits).
 */
export async function startObservability(
  service: string,
  logger: Logger,
  settings: HealthSettings,
  opts: ObservabilityOptions = {},
): Promise<Observability> {
  const { port: wanted, setting } = healthPortOf(service, settings);
  const host = settings.HEALTH_HOST;
  const registry = createRegistry(service);
  const health = createHealth(opts.checks);
  const errors = createDependencyErrorLog(logger, {
    registry,
    ...(opts.errorWindowMs ? { windowMs: opts.errorWindowMs } : {}),
  });
  installed.set(logger, errors);
  readinessGauge(registry, health);
  const server = await startHealthServer({ registry, health, port: wanted, host, setting });
  // debug: a service that cannot start says so in one line (item 5); the port is in its settings.
  logger.debug(
    { host, port: server.port },
    `health and metrics on http://${host}:${server.port} (/healthz /readyz /metrics)`,
  );
  return {
    registry,
    health,
    errors,
    server,
    drain: () => health.drain(),
    async close() {
      errors.flush();
      await server.close();
    },
  };
}

/**
 * /readyz as a series, so "a service is not ready" can be alerted on from Prometheus (kube-state-metrics
 * is not everywhere): the same checks, run at scrape time.
 */
function readinessGauge(registry: Registry, health: Health): void {
  new Gauge({
    name: "mailroom_ready",
    help: "1 when the service is ready (what /readyz answers 200 for): started, not draining, every check passing",
    registers: [registry],
    async collect() {
      this.set((await health.ready().catch(() => ({ ok: false }))).ok ? 1 : 0);
    },
  });
}

/**
 * The dependency-error log of the process `logger` belongs to (the one startObservability made), so
 * modules that only hold a logger (a worker's "error" listener) fold their errors into the same
 * count. Without one (a test wiring a worker by hand) a private limiter is made for that logger.
 */
export function dependencyErrors(logger: Logger): DependencyErrorLog {
  let log = installed.get(logger);
  if (!log) {
    log = createDependencyErrorLog(logger);
    installed.set(logger, log);
  }
  return log;
}
