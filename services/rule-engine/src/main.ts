import { poolOf } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { bootWorker, registerQueueMetrics } from "@mailroom/observability";
import { createEventPublisher } from "@mailroom/queues";
import { fatal, installShutdown } from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import { loadRuleEngineEnv } from "./env.ts";
import { createRuleEngineMetrics } from "./metrics.ts";
import { createParser } from "./parse.ts";
import { createDnsResolve } from "./resolver.ts";
import { createRspamdScanner } from "./spam.ts";
import { startRuleEngine } from "./worker.ts";

const bootLogger = createLogger("rule-engine");
try {
  const env = loadRuleEngineEnv();
  // Logger, Prisma, health port, Redis connections, the wait for Postgres and Redis, readiness checks.
  const { logger, prisma, obs, redisConnections, workerRedis, producerRedis } = await bootWorker("rule-engine", env);
  const inboundQueue = redisConnections.queue("inbound", producerRedis);
  const deliveryQueue = redisConnections.queue("delivery", producerRedis);
  // Deliveries to email destinations go to their own queue (the outbound-sender forwards them).
  const forwardQueue = redisConnections.queue("forward", producerRedis);
  // Depth and oldest-job age of the queue this service consumes (what its autoscaler watches).
  registerQueueMetrics(obs.registry, [inboundQueue]);
  const parser = createParser({ threads: env.RULE_ENGINE_CONCURRENCY, timeoutMs: env.PARSE_TIMEOUT_MS });
  const bytes = createByteStore(byteStoreConfig(env), poolOf(prisma));
  const engine = startRuleEngine({
    prisma,
    bytes,
    metrics: createRuleEngineMetrics(obs.registry),
    logger,
    deliveryQueue,
    forwardQueue,
    inboundQueue,
    connection: workerRedis,
    prefix: env.REDIS_PREFIX,
    concurrency: env.RULE_ENGINE_CONCURRENCY,
    sweepIntervalMs: env.SWEEP_INTERVAL_MS,
    sweepAfterMs: env.SWEEP_AFTER_MS,
    sweepPageSize: env.SWEEP_PAGE_SIZE,
    maxTries: env.PROCESSING_MAX_TRIES,
    memoryBytes: env.RULE_ENGINE_MEMORY_BYTES,
    lockDurationMs: env.RULE_ENGINE_LOCK_MS,
    parser,
    ...(env.RSPAMD_URL
      ? {
          spam: createRspamdScanner({
            url: env.RSPAMD_URL,
            ...(env.RSPAMD_PASSWORD ? { password: env.RSPAMD_PASSWORD } : {}),
          }),
        }
      : {}),
    resolver: createDnsResolve(env.DNS_SERVERS, {
      maxEntries: env.DNS_CACHE_SIZE,
      maxTtlS: env.DNS_CACHE_MAX_TTL_S,
      negativeTtlMaxS: env.DNS_NEGATIVE_TTL_MAX_S,
      errorTtlMs: env.DNS_ERROR_TTL_MS,
      maxInFlight: env.DNS_MAX_IN_FLIGHT,
      timeoutMs: env.DNS_TIMEOUT_MS,
    }),
    mtaHostname: env.SMTP_HOSTNAME,
    events: createEventPublisher(producerRedis, env.REDIS_PREFIX, (err, e) =>
      logger.warn({ err: err.message, type: e.type, accountId: e.accountId }, "event publish failed"),
    ),
  });
  logger.info({ concurrency: env.RULE_ENGINE_CONCURRENCY }, "rule-engine consuming queue inbound");
  // Started (listening, consuming): from now on /readyz answers on the dependencies' health.
  obs.health.started();
  installShutdown(
    logger,
    [
      // First: readiness turns false, so load balancers and probes see the drain.
      { name: "readiness", close: () => obs.drain() },
      { name: "worker", close: () => engine.close() },
      { name: "parser", close: () => parser.close() },
      { name: "queues", close: () => Promise.all([inboundQueue.close(), deliveryQueue.close(), forwardQueue.close()]) },
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
