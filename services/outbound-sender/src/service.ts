import { poolOf } from "@mailroom/db";
import {
  type BootDeps,
  bootWorker,
  createDeliveryMetrics,
  type RunningService,
  serviceStarted,
  type WorkerBoot,
} from "@mailroom/observability";
import { createEventPublisher, logPublishFailure } from "@mailroom/queues";
import { drainBudgetMs } from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import { startTracing } from "@mailroom/tracing";
import type { SenderEnv } from "./env.ts";
import { createRelay } from "./relay.ts";
import { type OutboundSender, startOutboundSender } from "./worker.ts";

/** What a test hands in instead of what the sender would make from its env. */
export type SenderServiceDeps = BootDeps<WorkerBoot>;

/** Shutdown in order: readiness, the workers, the relay, queues, byte store, then what the boot made. */
export type SenderService = RunningService & { sender: OutboundSender };

/** The outbound-sender process (queues `outbound` and `forward`), wired once for main.ts and tests. */
export async function startSenderService(env: SenderEnv, deps: SenderServiceDeps = {}): Promise<SenderService> {
  // Logger, Prisma, health port, Redis connections, the wait for Postgres and Redis, readiness checks.
  const boot = deps.boot ?? (await bootWorker("outbound-sender", env));
  const { logger, prisma, obs, redisConnections, workerRedis, producerRedis } = boot;
  const queue = redisConnections.queue("outbound", producerRedis);
  // Deliveries to email destinations: forwarded from their own queue (and retried onto it).
  const forwardQueue = redisConnections.queue("forward", producerRedis);
  const relay = createRelay({ url: env.SMTP_RELAY_URL, timeoutMs: env.SMTP_RELAY_TIMEOUT_MS });
  const bytes = createByteStore(byteStoreConfig(env), poolOf(prisma));
  // A span per forward attempt when OTEL_EXPORTER_OTLP_ENDPOINT is set (no SDK loaded otherwise).
  const tracing = await startTracing("outbound-sender", env, logger);
  const sender = startOutboundSender({
    prisma,
    tracing,
    bytes,
    metrics: createDeliveryMetrics(obs.registry, ["email"]),
    queue,
    logger,
    relay,
    backoffUnitMs: env.BACKOFF_UNIT_MS,
    maxAttempts: env.OUTBOUND_MAX_ATTEMPTS,
    connection: workerRedis,
    prefix: env.REDIS_PREFIX,
    concurrency: env.OUTBOUND_CONCURRENCY,
    sweepIntervalMs: env.SWEEP_INTERVAL_MS,
    // Running jobs may use SHUTDOWN_TIMEOUT_MS less what the rest of the shutdown needs.
    drainMs: drainBudgetMs(env.SHUTDOWN_TIMEOUT_MS),
    forwardQueue,
    events: createEventPublisher(producerRedis, env.REDIS_PREFIX, logPublishFailure(logger)),
  });
  logger.info(
    { relay: new URL(env.SMTP_RELAY_URL).host, concurrency: env.OUTBOUND_CONCURRENCY },
    "outbound-sender consuming queues outbound and forward",
  );
  const service = serviceStarted(boot, deps.boot, [
    { name: "worker", close: () => sender.close() },
    { name: "relay", close: () => relay.close() },
    { name: "queue", close: () => Promise.all([queue.close(), forwardQueue.close()]) },
    { name: "byte store", close: () => bytes.close() },
    { name: "tracing", close: () => tracing.shutdown() },
  ]);
  return { ...service, sender };
}
