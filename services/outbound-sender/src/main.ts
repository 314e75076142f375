import { createPrisma, poolOf } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import {
  createDeliveryMetrics,
  redisReadiness,
  registerQueueMetrics,
  startObservability,
} from "@mailroom/observability";
import { createEventPublisher, createRedisConnections } from "@mailroom/queues";
import { awaitDependencies, fatal, installShutdown, postgresDependency, redisDependency } from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import { loadSenderEnv } from "./env.ts";
import { createRelay } from "./relay.ts";
import { startOutboundSender } from "./worker.ts";

const bootLogger = createLogger("outbound-sender");
try {
  const env = loadSenderEnv();
  const logger = createLogger("outbound-sender", env.LOG_LEVEL);
  const prisma = createPrisma(env.DATABASE_URL);
  // The health/metrics port first: probes answer (not ready yet) while dependencies are awaited.
  const obs = await startObservability("outbound-sender", logger, env);
  // Connections and queues with error listeners, and the eviction-policy check, as in every service;
  // their errors go through the rate-limited dependency-error log (one line per outage window).
  const redisConnections = createRedisConnections({
    url: env.REDIS_URL,
    prefix: env.REDIS_PREFIX,
    logger,
    onError: (err, source) => obs.errors.report("redis", err, { source }),
  });
  const workerRedis = redisConnections.connect("worker");
  const producerRedis = redisConnections.connect("worker");
  // Work only once Postgres and Redis answer; past STARTUP_TIMEOUT_MS exit with one line (and be restarted).
  await awaitDependencies(
    [
      postgresDependency(env.DATABASE_URL, () => poolOf(prisma).query("SELECT 1")),
      redisDependency(env.REDIS_URL, producerRedis, workerRedis),
    ],
    env.STARTUP_TIMEOUT_MS,
    (name, error) => logger.warn({ error }, `waiting for ${name}`),
  );
  const queue = redisConnections.queue("outbound", producerRedis);
  obs.health.addCheck("postgres", () => prisma.$queryRaw`SELECT 1`);
  obs.health.addCheck("redis", redisReadiness(producerRedis));
  producerRedis.on("ready", () => obs.errors.recovered("redis"));
  // Depth and oldest-job age of the queue this service consumes (what its autoscaler watches).
  registerQueueMetrics(obs.registry, [queue]);
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
    forwardPollMs: env.FORWARD_POLL_MS,
    events: createEventPublisher(producerRedis, env.REDIS_PREFIX, (err, e) =>
      logger.warn({ err: err.message, type: e.type, accountId: e.accountId }, "event publish failed"),
    ),
  });
  const relayHost = new URL(env.SMTP_RELAY_URL).host;
  logger.info({ relay: relayHost, concurrency: env.OUTBOUND_CONCURRENCY }, "outbound-sender consuming queue outbound");
  // Started (listening, consuming): from now on /readyz answers on the dependencies' health.
  obs.health.started();
  installShutdown(
    logger,
    [
      // First: readiness turns false, so load balancers and probes see the drain.
      { name: "readiness", close: () => obs.drain() },
      { name: "worker", close: () => sender.close() },
      { name: "relay", close: () => relay.close() },
      { name: "queue", close: () => queue.close() },
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
