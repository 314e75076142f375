import { createServer } from "node:http";
import { createCursorCodec, createPrisma, poolOf } from "@mailroom/db";
import { createDomainDns } from "@mailroom/domain-verification";
import { createEgressResolver } from "@mailroom/egress";
import { createLogger } from "@mailroom/log";
import { redisReadiness, startObservability } from "@mailroom/observability";
import { createRedisConnections } from "@mailroom/queues";
import {
  awaitDependencies,
  fatal,
  installShutdown,
  listen,
  postgresDependency,
  redisDependency,
} from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import { createApp } from "./app.ts";
import { loadApiEnv } from "./env.ts";
import { createEventHub } from "./events/hub.ts";
import { createDestinationCheck } from "./lib/destinations.ts";
import { outboundEnqueuer } from "./lib/outbound-queue.ts";
import { deliveryEnqueuer } from "./ops/deliveries.ts";

const bootLogger = createLogger("api");
try {
  const env = loadApiEnv();
  const logger = createLogger("api", env.LOG_LEVEL);
  const prisma = createPrisma(env.DATABASE_URL);
  // The health/metrics port first: probes answer (not ready yet) while dependencies are awaited.
  const obs = await startObservability("api", logger, env);
  // Connections and queues with error listeners, and the eviction-policy check, as in every service;
  // their errors go through the rate-limited dependency-error log (one line per outage window).
  const redisConnections = createRedisConnections({
    url: env.REDIS_URL,
    prefix: env.REDIS_PREFIX,
    logger,
    onError: (err, source) => obs.errors.report("redis", err, { source }),
  });
  const redis = redisConnections.connect("producer");
  // Listen only once Postgres and Redis answer (the rate limiter could not count a request before);
  // past STARTUP_TIMEOUT_MS, or with the port taken, exit with one line instead of limping on.
  await awaitDependencies(
    [
      postgresDependency(env.DATABASE_URL, () => poolOf(prisma).query("SELECT 1")),
      redisDependency(env.REDIS_URL, redis),
    ],
    env.STARTUP_TIMEOUT_MS,
    (name, error) => logger.warn({ error }, `waiting for ${name} before listening`),
  );
  const outboundQueue = redisConnections.queue("outbound", redis);
  const deliveryQueue = redisConnections.queue("delivery", redis);
  const forwardQueue = redisConnections.queue("forward", redis);
  obs.health.addCheck("postgres", () => prisma.$queryRaw`SELECT 1`);
  obs.health.addCheck("redis", redisReadiness(redis));
  redis.on("ready", () => obs.errors.recovered("redis"));
  const events = createEventHub(redis, env.REDIS_PREFIX, logger);
  // DNS_SERVERS behind every SSRF check (create/update/test), as in the dispatcher at delivery.
  const egressResolver = createEgressResolver(env.DNS_SERVERS);
  const bytes = createByteStore(byteStoreConfig(env), poolOf(prisma));
  const app = createApp({
    prisma,
    bytes,
    ...(env.SIGNED_URL_SECRET ? { signedUrlSecret: env.SIGNED_URL_SECRET } : {}),
    registry: obs.registry,
    draining: () => obs.health.draining,
    redis,
    logger,
    bodyLimit: env.API_BODY_LIMIT,
    trustProxy: env.API_TRUST_PROXY,
    rateLimit: {
      limit: env.RATE_LIMIT_REQUESTS,
      windowSeconds: env.RATE_LIMIT_WINDOW_SECONDS,
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
    enqueueDelivery: deliveryEnqueuer({ delivery: deliveryQueue, forward: forwardQueue }),
    events,
    config: {
      mxHost: env.MX_HOST,
      dkimDomain: env.DKIM_DOMAIN,
      publicApiUrl: env.PUBLIC_API_URL,
      allowPrivateDestinations: env.ALLOW_PRIVATE_DESTINATIONS,
    },
  });
  const server = createServer(app);
  await listen(server, env.API_PORT, env.API_HOST);
  logger.info({ host: env.API_HOST, port: env.API_PORT }, `api listening on http://${env.API_HOST}:${env.API_PORT}`);
  server.on("error", (err) => fatal(logger, err));
  // Started (listening, consuming): from now on /readyz answers on the dependencies' health.
  obs.health.started();
  installShutdown(
    logger,
    [
      // First: readiness turns false, so load balancers and probes see the drain.
      { name: "readiness", close: () => obs.drain() },
      // First: open event streams and waits end, so the HTTP server can close without waiting on them.
      { name: "events", close: () => events.close() },
      { name: "http", close: () => new Promise<void>((resolve) => server.close(() => resolve())) },
      { name: "queue", close: () => Promise.all([outboundQueue.close(), deliveryQueue.close(), forwardQueue.close()]) },
      { name: "redis", close: () => redis.quit() },
      { name: "byte store", close: () => bytes.close() },
      { name: "prisma", close: () => prisma.$disconnect() },
      { name: "health", close: () => obs.close() },
    ],
    env.SHUTDOWN_TIMEOUT_MS,
  );
} catch (err) {
  fatal(bootLogger, err);
}
