import { createCursorCodec, createPrisma } from "@mailroom/db";
import { createDomainDns } from "@mailroom/domain-verification";
import { createEgressResolver } from "@mailroom/egress";
import { createLogger } from "@mailroom/log";
import { createRedisConnections } from "@mailroom/queues";
import { fatal, installShutdown } from "@mailroom/runtime";
import { createApp } from "./app.ts";
import { loadApiEnv } from "./env.ts";
import { createEventHub } from "./events/hub.ts";
import { createDestinationCheck } from "./lib/destinations.ts";
import { outboundEnqueuer } from "./lib/outbound-queue.ts";
import { waitForRedisLogged } from "./lib/redis-ready.ts";
import { deliveryEnqueuer } from "./ops/deliveries.ts";

const bootLogger = createLogger("api");
try {
  const env = loadApiEnv();
  const logger = createLogger("api", env.LOG_LEVEL);
  const prisma = createPrisma(env.DATABASE_URL);
  // Connections and queues with error listeners, and the eviction-policy check, as in every service.
  const redisConnections = createRedisConnections({ url: env.REDIS_URL, prefix: env.REDIS_PREFIX, logger });
  const redis = redisConnections.connect("producer");
  const outboundQueue = redisConnections.queue("outbound", redis);
  const deliveryQueue = redisConnections.queue("delivery", redis);
  const events = createEventHub(redis, env.REDIS_PREFIX, logger);
  // DNS_SERVERS behind every SSRF check (create/update/test), as in the dispatcher at delivery.
  const egressResolver = createEgressResolver(env.DNS_SERVERS);
  const app = createApp({
    prisma,
    redis,
    logger,
    bodyLimit: env.API_BODY_LIMIT,
    rateLimit: {
      limit: env.RATE_LIMIT_REQUESTS,
      windowSeconds: env.RATE_LIMIT_WINDOW_SECONDS,
      algorithm: env.RATE_LIMIT_ALGORITHM,
      prefix: env.REDIS_PREFIX,
    },
    cursors: createCursorCodec(env.CURSOR_SECRET),
    checkDestination: createDestinationCheck({
      allowPrivate: env.ALLOW_PRIVATE_DESTINATIONS,
      resolver: egressResolver,
    }),
    egressResolver,
    domainDns: createDomainDns({ servers: env.DNS_SERVERS }),
    enqueueOutbound: outboundEnqueuer(outboundQueue),
    enqueueDelivery: deliveryEnqueuer(deliveryQueue),
    events,
    config: {
      mxHost: env.MX_HOST,
      dkimDomain: env.DKIM_DOMAIN,
      publicApiUrl: env.PUBLIC_API_URL,
      allowPrivateDestinations: env.ALLOW_PRIVATE_DESTINATIONS,
    },
  });
  // Listen only once Redis is ready: until then the rate limiter could not count a request.
  await waitForRedisLogged(redis, logger);
  const server = app.listen(env.API_PORT, env.API_HOST, () => {
    logger.info({ host: env.API_HOST, port: env.API_PORT }, `api listening on http://${env.API_HOST}:${env.API_PORT}`);
  });
  server.on("error", (err) => fatal(logger, err));
  installShutdown(
    logger,
    [
      // First: open event streams and waits end, so the HTTP server can close without waiting on them.
      { name: "events", close: () => events.close() },
      { name: "http", close: () => new Promise<void>((resolve) => server.close(() => resolve())) },
      { name: "queue", close: () => Promise.all([outboundQueue.close(), deliveryQueue.close()]) },
      { name: "redis", close: () => redis.quit() },
      { name: "prisma", close: () => prisma.$disconnect() },
    ],
    env.SHUTDOWN_TIMEOUT_MS,
  );
} catch (err) {
  fatal(bootLogger, err);
}
