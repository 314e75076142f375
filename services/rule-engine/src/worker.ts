import { poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { dependencyErrors } from "@mailroom/observability";
import type { Redis } from "@mailroom/queues";
import {
  accountVolume,
  createWorker,
  DEFAULT_DRAIN_MS,
  drainWorker,
  RETRY_PRIORITY,
  type TypedQueue,
  type Worker,
} from "@mailroom/queues";
import { type Periodic, startPeriodic } from "@mailroom/runtime";
import { processJob } from "./attempts.ts";
import { createByteBudget } from "./budget.ts";
import type { RuleEngineMetrics } from "./metrics.ts";
import { isDependencyOutage } from "./outage.ts";
import type { ProcessDeps } from "./process.ts";
import { createShield } from "./shield.ts";
import { storeInBatches } from "./store-batch.ts";
import { purgeUnusedSpools, sweepPendingRecipients } from "./sweeper.ts";

export type RuleEngine = { worker: Worker; close(): Promise<void> };

export type RuleEngineOptions = ProcessDeps & {
  connection: Redis;
  prefix: string;
  inboundQueue: TypedQueue<"inbound">;
  concurrency: number;
  sweepIntervalMs: number;
  /** A pending recipient older than this without a job is re-queued (default 2 min). */
  sweepAfterMs?: number;
  /** BullMQ job lock; a crashed worker's job is taken over once it lapses (default 30 s). */
  lockDurationMs?: number;
  /** Tries before a message is stored as PROCESSING_FAILED (default 5; attempts.ts). */
  maxTries?: number;
  /** Recipients the sweeper reads per query; it pages through all of them (default 500). */
  sweepPageSize?: number;
  /** Message bytes processed at once (budget.ts); absent: only the concurrency bounds them. */
  memoryBytes?: number;
  /** Outcomes and parse failures (metrics.ts); absent: not measured. */
  metrics?: RuleEngineMetrics;
  /** On close, how long running jobs may take before they are handed back (default 30 s). */
  drainMs?: number;
};

/** The `inbound` worker plus the sweeper that re-queues recipients whose jobs were lost. */
export function startRuleEngine(deps: RuleEngineOptions): RuleEngine {
  const processDeps: ProcessDeps = {
    ...deps,
    shield: deps.shield ?? createShield(deps.prisma),
    // Emails stored while another store transaction is in flight share the next one (group commit).
    storeEmail: deps.storeEmail ?? storeInBatches(poolOf(deps.prisma)),
    ...(deps.memoryBytes ? { memoryBudget: createByteBudget(deps.memoryBytes) } : {}),
  };
  const worker = createWorker(
    "inbound",
    async ({ spoolRecipientId }, job) => {
      // The job's id is its first recipient's; the others of its group carry it as their jobId.
      // Each recipient's outcome and time go to the metrics as it ends (attempts.ts processJob).
      const error = await processJob(processDeps, spoolRecipientId, deps.maxTries, deps.metrics);
      if (error === undefined) return;
      // The retry lane: a try that counted comes back after every first try (BullMQ keeps the
      // priority through the backoff), so poison using up its tries never delays new mail. A try
      // an outage cut short keeps its place: it was given back and is not the message's fault.
      if (!isDependencyOutage(error)) await job.changePriority({ priority: RETRY_PRIORITY }).catch(() => undefined);
      throw error;
    },
    {
      connection: deps.connection,
      prefix: deps.prefix,
      concurrency: deps.concurrency,
      ...(deps.lockDurationMs ? { lockDuration: deps.lockDurationMs, stalledInterval: deps.lockDurationMs } : {}),
    },
  );
  logFailures(worker, deps.logger);
  const sweeper = startSweeper(deps);
  return {
    worker,
    async close() {
      // The schedule stops at once; a pass in flight is awaited once the worker is closed.
      const sweepStopped = sweeper.close();
      await drainWorker(worker, deps.drainMs ?? DEFAULT_DRAIN_MS, deps.logger);
      await sweepStopped;
    },
  };
}

function logFailures(worker: Worker, logger: Logger): void {
  // Without a listener an "error" (e.g. Redis restarting under a running job) would be thrown.
  // Rate-limited: while Redis is down every reconnect attempt lands here.
  worker.on("error", (err) => dependencyErrors(logger).report("redis", err, { source: "inbound worker" }));
  worker.on("failed", (job, err) => {
    // An outage fails every job that comes up (and each of its retries): one line per window, not one per job.
    if (isDependencyOutage(err)) dependencyErrors(logger).report("postgres", err, { source: "inbound job" });
    else logger.warn({ jobId: job?.id, err: err.message }, "inbound job failed");
  });
}

/**
 * Re-queues recipients whose jobs were lost, then purges spools nothing needs; one pass at a time.
 * The first pass comes one interval after start, as it did with the setInterval this replaced.
 */
function startSweeper(
  deps: Pick<ProcessDeps, "prisma" | "logger"> & {
    inboundQueue: TypedQueue<"inbound">;
    sweepIntervalMs: number;
    sweepAfterMs?: number;
    sweepPageSize?: number;
  },
): Periodic<void> {
  const age = deps.sweepAfterMs !== undefined ? { olderThanMs: deps.sweepAfterMs } : {};
  const page = deps.sweepPageSize !== undefined ? { pageSize: deps.sweepPageSize } : {};
  const volume = accountVolume();
  return startPeriodic({
    run: async () => {
      await sweepPendingRecipients(deps.prisma, deps.inboundQueue, deps.logger, { ...age, ...page, volume });
      await purgeUnusedSpools(deps.prisma, deps.logger, age);
    },
    intervalMs: deps.sweepIntervalMs,
    runAtStart: false,
    onError: (err) => deps.logger.warn({ err: (err as Error).message }, "sweep failed"),
  });
}
