import { collectDefaultMetrics, Registry } from "prom-client";

/**
 * One Prometheus registry per process, every series labelled with the service's name, with Node's
 * process metrics (CPU, memory, event-loop lag, GC). Services register their own metrics on it in
 * their own modules; nothing uses prom-client's global registry, so tests can run several services
 * in one process without their series colliding.
 */
export function createRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Histogram buckets (seconds) for outbound calls: webhook POSTs, SMTP relays, API requests. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
