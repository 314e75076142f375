import { poolOf } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { bootWorker, createDeliveryMetrics, registerQueueMetrics } from "@mailroom/observability";
import { createEventPublisher } from "@mailroom/queues";
import { fatal, installShutdown } from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import { loadSenderEnv } from "./env.ts";
import { createRelay } from "./relay.ts";
import { startOutboundSender } from "./worker.ts";

const bootLogger = createLogger("outbound-sender");
try {
  const env = loadSenderEnv();
  // Logger, Prisma, health port, Redis connections, the wait for Postgres and Redis, readiness checks.
  const { logger, prisma, obs, redisConnections, workerRedis, producerRedis } = await bootWorker(
    "outbound-sender",
    env,
  );
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
    events: createEventPublisher(producerRedis, env.REDIS_PREFIX, (err, e) =>
      logger.warn({ err: err.message, type: e.type, accountId: e.accountId }, "event publish failed"),
    ),
  });
  const relayHost = new URL(env.SMTP_RELAY_URL).host;
  logger.info(
    { relay: relayHost, concurrency: env.OUTBOUND_CONCURRENCY },
    "outbound-sender consuming queues outbound and forward",
  );
  // Started (listening, consuming): from now on /readyz answers on the dependencies' health.
  obs.health.started();
  installShutdown(
    logger,
    [
      // First: readiness turns false, so load balancers and probes see the drain.
      { name: "readiness", close: () => obs.drain() },
      { name: "worker", close: () => sender.close() },
      { name: "relay", close: () => relay.close() },
      { name: "queue", close: () => Promise.all([queue.close(), forwardQueue.close()]) },
      { name: "redis", close: () => Promise.all([workerRedis.quit(), producerRedis.quit()]) },
      { name: "byte store", close: () => bytes.close() },
      { name: "prisma", close: () => prisma.$disconnect() },
      { name: "health", close: () => obs.close() },
    ],
    env.SHUTDOWN_TIMEOUT_MS,
  );
} catch (err) {
  fatal(bootLogger, err);
}
