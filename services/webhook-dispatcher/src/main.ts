import { poolOf } from "@mailroom/db";
import { createConnectionPool, createEgressResolver } from "@mailroom/egress";
import { createLogger } from "@mailroom/log";
import { bootWorker, createDeliveryMetrics, registerQueueMetrics } from "@mailroom/observability";
import { createEventPublisher } from "@mailroom/queues";
import { fatal, installShutdown } from "@mailroom/runtime";
import { attachmentLinks, byteStoreConfig, createByteStore } from "@mailroom/storage";
import { loadDispatcherEnv } from "./env.ts";
import { createSender } from "./send.ts";
import { startDispatcher } from "./worker.ts";

const bootLogger = createLogger("webhook-dispatcher");
try {
  const env = loadDispatcherEnv();
  // Logger, Prisma, health port, Redis connections, the wait for Postgres and Redis, readiness checks.
  const { logger, prisma, obs, redisConnections, workerRedis, producerRedis } = await bootWorker(
    "webhook-dispatcher",
    env,
  );
  const queue = redisConnections.queue("delivery", producerRedis);
  // Depth and oldest-job age of the queue this service consumes (what its autoscaler watches).
  registerQueueMetrics(obs.registry, [queue]);
  // The same DNS_SERVERS setup as the API's SSRF check at endpoint creation (createEgressResolver).
  const resolver = createEgressResolver(env.DNS_SERVERS);
  // Keep-alive connections per endpoint, keyed by the addresses checked at each delivery.
  const pool = createConnectionPool();
  // Only links are signed here (no bytes move): with BYTE_STORE=s3 each payload carries presigned URLs.
  const bytes = createByteStore(byteStoreConfig(env), poolOf(prisma));
  const dispatcher = startDispatcher({
    prisma,
    metrics: createDeliveryMetrics(obs.registry),
    queue,
    logger,
    send: createSender({ allowPrivate: env.ALLOW_PRIVATE_DESTINATIONS, resolver, pool }),
    publicApiUrl: env.PUBLIC_API_URL,
    attachmentLinks: attachmentLinks(
      bytes,
      env.SIGNED_URL_TTL_SECONDS,
      env.SIGNED_URL_SECRET ? { publicApiUrl: env.PUBLIC_API_URL, secret: env.SIGNED_URL_SECRET } : undefined,
    ),
    backoffUnitMs: env.BACKOFF_UNIT_MS,
    connection: workerRedis,
    prefix: env.REDIS_PREFIX,
    concurrency: env.DISPATCHER_CONCURRENCY,
    endpointConcurrency: env.DISPATCHER_ENDPOINT_CONCURRENCY,
    slotsRedis: producerRedis,
    sweepIntervalMs: env.SWEEP_INTERVAL_MS,
    sweepGraceMs: env.SWEEP_GRACE_MS,
    events: createEventPublisher(producerRedis, env.REDIS_PREFIX, (err, e) =>
      logger.warn({ err: err.message, type: e.type, accountId: e.accountId }, "event publish failed"),
    ),
  });
  logger.info(
    { concurrency: env.DISPATCHER_CONCURRENCY, endpointConcurrency: env.DISPATCHER_ENDPOINT_CONCURRENCY },
    "webhook-dispatcher consuming queue delivery",
  );
  // Started (listening, consuming): from now on /readyz answers on the dependencies' health.
  obs.health.started();
  installShutdown(
    logger,
    [
      // First: readiness turns false, so load balancers and probes see the drain.
      { name: "readiness", close: () => obs.drain() },
      { name: "worker", close: () => dispatcher.close() },
      { name: "connections", close: async () => pool.close() },
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
