import type { Queue } from "@mailroom/queues";
import { Gauge, type Registry } from "prom-client";

const STATES = ["waiting", "active", "delayed", "prioritized", "failed", "completed"] as const;

/**
 * Queue depth per state and the age of the oldest waiting job, per queue, read from Redis at
 * scrape time (what an HPA or KEDA scales workers on, and what "mail is stuck" alerts watch).
 * A read that fails or takes longer than `timeoutMs` leaves the series out of that scrape rather
 * than hanging it; `mailroom_queue_scrape_errors` says so.
 */
export function registerQueueMetrics(registry: Registry, queues: Queue[], timeoutMs = 2_000, now = Date.now): void {
  const snapshot = sharedSnapshot(queues, timeoutMs, now);

  new Gauge({
    name: "mailroom_queue_scrape_errors",
    help: "1 when this scrape could not read the queue from Redis (its depth series are then absent)",
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      const results = await snapshot();
      queues.forEach((q, i) => {
        this.set({ queue: q.name }, results[i] ? 0 : 1);
      });
    },
  });
  new Gauge({
    name: "mailroom_queue_jobs",
    help: "Jobs in a queue by state",
    labelNames: ["queue", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      const results = await snapshot();
      queues.forEach((q, i) => {
        const r = results[i];
        if (r) for (const state of STATES) this.set({ queue: q.name, state }, r.counts[state] ?? 0);
      });
    },
  });
  new Gauge({
    name: "mailroom_queue_oldest_waiting_seconds",
    help: "Age of the oldest job waiting for a worker (0 when none waits)",
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      this.reset();
      const results = await snapshot();
      queues.forEach((q, i) => {
        const r = results[i];
        if (r) this.set({ queue: q.name }, r.ageSeconds);
      });
    },
  });
}

type QueueReading = { counts: Record<string, number>; ageSeconds: number };

/**
 * The oldest of: the next job in the plain waiting list, and the first and last in line of the
 * prioritized set (the `inbound` queue's jobs carry priorities: fairness.ts in @mailroom/queues).
 * In a prioritized set the longest-waiting job is not always at an end, but the first in line is
 * the one a stuck worker would leave waiting, and the last is where retries and the busiest
 * account's jobs wait: reading three jobs keeps the scrape cheap at any depth.
 */
async function readQueue(queue: Queue, timeoutMs: number, now: () => number): Promise<QueueReading> {
  const [counts, ...ends] = await withTimeout(
    Promise.all([
      queue.getJobCounts(...STATES),
      queue.getJobs(["wait"], 0, 0, true),
      queue.getJobs(["prioritized"], 0, 0, true),
      queue.getJobs(["prioritized"], 0, 0, false),
    ]),
    timeoutMs,
  );
  // A job that was delayed (a retry with backoff) has been waiting only since its delay ran out.
  const ages = ends.flat().map((job) => Math.max(0, now() - (job.timestamp + (job.delay ?? 0))));
  return { counts, ageSeconds: Math.max(0, ...ages) / 1000 };
}

/**
 * One Redis read per queue per scrape, shared by the three gauges (prom-client collects them
 * together): the reading in flight is handed to every gauge that asks before it settles.
 */
function sharedSnapshot(queues: Queue[], timeoutMs: number, now: () => number): () => Promise<(QueueReading | null)[]> {
  let pending: Promise<(QueueReading | null)[]> | null = null;
  return () => {
    if (!pending) {
      const current = Promise.all(queues.map((q) => readQueue(q, timeoutMs, now).catch(() => null)));
      pending = current;
      void current.then(() => {
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
