import {
  catalog,
  DEPTH_STATES,
  type QueueDepth,
  type QueueKey,
  type RedisClient,
  readQueueDepths,
} from "@mailroom/queues";
import { Gauge, type Registry } from "prom-client";

export type QueueMetricsOptions = {
  /** The queues reported; default: every queue of the catalog. */
  queues?: QueueKey[];
  /** A read that takes longer is dropped from that scrape (default 2 s). */
  timeoutMs?: number;
  /** A reading is reused for this long, so several scrapers cost one Redis read (default 5 s). */
  cacheMs?: number;
  now?: () => number;
};

type Reading = Map<QueueKey, QueueDepth> | null;

/**
 * Depth per state and the age of the oldest job waiting for a worker, for every queue of the
 * catalog, on the registry of any service that can reach Redis, not only the queue's consumer: when
 * the rule engine is down, the ingest, the API and the other workers still report `inbound` growing
 * old, which is when that alert matters. Every replica reports the same numbers (they read the same
 * Redis), so alerts and autoscalers take `max by (queue)` (infra/prometheus/alerts.yml records
 * `mailroom:queue_oldest_waiting_seconds:max` and `mailroom:queue_jobs:max`).
 *
 * Cost: one script per queue, pipelined into one Redis round trip (one per queue on a cluster), at
 * most once per `cacheMs` however many scrapers ask. A read that fails or takes longer than
 * `timeoutMs` leaves the series out of that scrape instead of hanging it, and
 * `mailroom_queue_scrape_errors` says so; while the connection is down nothing is queued on it.
 */
export function registerQueueMetrics(
  registry: Registry,
  redis: RedisClient,
  prefix: string,
  opts: QueueMetricsOptions = {},
): void {
  const read = cachedReading(redis, prefix, opts);
  const queues = opts.queues ?? (Object.keys(catalog) as QueueKey[]);
  new Gauge({
    name: "mailroom_queue_scrape_errors",
    help: "1 when this scrape could not read the queue from Redis (its depth series are then absent)",
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      const reading = await read();
      for (const queue of queues) this.set({ queue }, reading?.has(queue) ? 0 : 1);
    },
  });
  new Gauge({
    name: "mailroom_queue_jobs",
    help: "Jobs in a queue by state, as Redis holds them (every service reports every queue: aggregate with max by (queue, state))",
    labelNames: ["queue", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      const reading = await read();
      for (const [queue, depth] of reading ?? []) {
        for (const state of DEPTH_STATES) this.set({ queue, state }, depth.counts[state]);
      }
    },
  });
  new Gauge({
    name: "mailroom_queue_oldest_waiting_seconds",
    help: "How long the oldest job that could run now has waited for a worker (0 when none waits; aggregate with max by (queue))",
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      this.reset();
      const reading = await read();
      for (const [queue, depth] of reading ?? []) this.set({ queue }, depth.oldestSeconds);
    },
  });
}

/**
 * One reading shared by the three gauges of a scrape (prom-client collects them together) and by
 * every scrape within `cacheMs`. A failed reading is not kept: the next scrape tries again.
 */
function cachedReading(redis: RedisClient, prefix: string, opts: QueueMetricsOptions): () => Promise<Reading> {
  const { timeoutMs = 2_000, cacheMs = 5_000, now = Date.now } = opts;
  let pending: Promise<Reading> | null = null;
  let kept: { at: number; reading: Reading } | null = null;
  return () => {
    if (kept && now() - kept.at < cacheMs) return Promise.resolve(kept.reading);
    if (!pending) {
      const at = now();
      const current = (
        redis.status === "ready"
          ? withTimeout(readQueueDepths(redis, prefix, at, opts.queues), timeoutMs)
          : Promise.reject(new Error(`connection ${redis.status}`))
      ).catch(() => null);
      pending = current;
      void current.then((reading) => {
        if (reading) kept = { at, reading };
        if (pending === current) pending = null;
      });
    }
    return pending;
  };
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
