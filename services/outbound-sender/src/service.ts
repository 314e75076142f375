import { poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import {
  bootSteps,
  bootWorker,
  createDeliveryMetrics,
  registerQueueMetrics,
  type WorkerBoot,
} from "@mailroom/observability";
import { createEventPublisher, logPublishFailure } from "@mailroom/queues";
import { closeInOrder, type ShutdownStep } from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import type { SenderEnv } from "./env.ts";
import { createRelay } from "./relay.ts";
import { type OutboundSender, startOutboundSender } from "./worker.ts";

/** What a test hands in instead of what the sender would make from its env. */
export type SenderServiceDeps = {
  /** Logger, Prisma, health port and Redis shared with other services; absent: made here and closed by close(). */
  boot?: WorkerBoot;
};

export type SenderService = {
  logger: Logger;
  sender: OutboundSender;
  /** Shutdown in order: readiness, the workers, the relay, queues, byte store, then what the boot made. */
  steps: ShutdownStep[];
  close(): Promise<void>;
};

/** The outbound-sender process (queues `outbound` and `forward`), wired once for main.ts and tests. */
export async function startSenderService(env: SenderEnv, deps: SenderServiceDeps = {}): Promise<SenderService> {
  // Logger, Prisma, health port, Redis connections, the wait for Postgres and Redis, readiness checks.
  const boot = deps.boot ?? (await bootWorker("outbound-sender", env));
  const { logger, prisma, obs, redisConnections, workerRedis, producerRedis } = boot;
  const queue = redisConnections.queue("outbound", producerRedis);
  // Deliveries to email destinations: forwarded from their own queue (and retried onto it).
  const forwardQueue = redisConnections.queue("forward", producerRedis);
  // Depth and oldest-job age of the queues this service consumes (what its autoscaler watches).
  registerQueueMetrics(obs.registry, [queue, forwardQueue]);
  const relay = createRelay({ url: env.SMTP_RELAY_URL, timeoutMs: env.SMTP_RELAY_TIMEOUT_MS });
  const bytes = createByteStore(byteStoreConfig(env), poolOf(prisma));
  const sender = startOutboundSender({
    prisma,
    bytes,
    metrics: createDeliveryMetrics(obs.registry),
    queue,
    logger,
    relay,
    backoffUnitMs: env.BACKOFF_UNIT_MS,
    maxAttempts: env.OUTBOUND_MAX_ATTEMPTS,
    connection: workerRedis,
    prefix: env.REDIS_PREFIX,
    concurrency: env.OUTBOUND_CONCURRENCY,
    sweepIntervalMs: env.SWEEP_INTERVAL_MS,
    forwardQueue,
    events: createEventPublisher(producerRedis, env.REDIS_PREFIX, logPublishFailure(logger)),
  });
  logger.info(
    { relay: new URL(env.SMTP_RELAY_URL).host, concurrency: env.OUTBOUND_CONCURRENCY },
    "outbound-sender consuming queues outbound and forward",
  );
  // Started (listening, consuming): from now on /readyz answers on the dependencies' health.
  obs.health.started();
  const steps: ShutdownStep[] = [
    // First: readiness turns false, so load balancers and probes see the drain.
    { name: "readiness", close: () => obs.drain() },
    { name: "worker", close: () => sender.close() },
    { name: "relay", close: () => relay.close() },
    { name: "queue", close: () => Promise.all([queue.close(), forwardQueue.close()]) },
    { name: "byte store", close: () => bytes.close() },
    ...(deps.boot ? [] : bootSteps(boot)),
  ];
  return { logger, sender, steps, close: () => closeInOrder(logger, steps) };
}
