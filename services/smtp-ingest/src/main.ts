import { readFileSync } from "node:fs";
import { createPrisma, poolOf } from "@mailroom/db";
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
import { defaultBatchLimits } from "./accept-batch.ts";
import { DataBudget } from "./data-budget.ts";
import { loadIngestEnv } from "./env.ts";
import { createIngestServer } from "./server.ts";
import { startStagingPurge } from "./staging.ts";

const bootLogger = createLogger("smtp-ingest");
try {
  const env = loadIngestEnv();
  const logger = createLogger("smtp-ingest", env.LOG_LEVEL);
  const prisma = createPrisma(env.DATABASE_URL, { max: env.DATABASE_POOL_SIZE });
  // The health/metrics port first: probes answer (not ready yet) while dependencies are awaited.
  const obs = await startObservability("smtp-ingest", logger, env);
  // Connections and queues with error listeners, and the eviction-policy check, as in every service;
  // their errors go through the rate-limited dependency-error log (one line per outage window).
  const redisConnections = createRedisConnections({
    url: env.REDIS_URL,
    prefix: env.REDIS_PREFIX,
    logger,
    onError: (err, source) => obs.errors.report("redis", err, { source }),
  });
  const redis = redisConnections.connect("producer");
  const queue = redisConnections.queue("inbound", redis);
  obs.health.addCheck("postgres", () => prisma.$queryRaw`SELECT 1`);
  obs.health.addCheck("redis", redisReadiness(redis));
  redis.on("ready", () => obs.errors.recovered("redis"));
  const server = createIngestServer({
    prisma,
    registry: obs.registry,
    queue,
    logger,
    hostname: env.SMTP_HOSTNAME,
    ...(env.SMTP_POSTMASTER_DOMAIN ? { postmasterDomain: env.SMTP_POSTMASTER_DOMAIN } : {}),
    ...(env.SMTP_PROXY_PROTOCOL ? { proxyProtocol: { trustedCidrs: env.SMTP_PROXY_TRUSTED_CIDRS } } : {}),
    maxMessageBytes: env.MAX_MESSAGE_BYTES,
    maxRecipients: env.MAX_RECIPIENTS,
    socketTimeoutMs: env.SMTP_SOCKET_TIMEOUT_MS,
    connectionTimeoutMs: env.SMTP_CONNECTION_TIMEOUT_MS,
    maxConnections: env.SMTP_MAX_CONNECTIONS,
    maxConnectionsPerIp: env.SMTP_MAX_CONNECTIONS_PER_IP,
    policy: {
      maxPerNet: env.SMTP_MAX_CONNECTIONS_PER_NET,
      maxPreMail: env.SMTP_MAX_PRE_MAIL_SESSIONS ?? Math.max(1, Math.floor(env.SMTP_MAX_CONNECTIONS / 2)),
      mailDeadlineMs: env.SMTP_MAIL_DEADLINE_MS,
      commandTimeoutMs: env.SMTP_COMMAND_TIMEOUT_MS,
      dataMinBytesPerSec: env.SMTP_DATA_MIN_BYTES_PER_SEC,
      dataRateWindowMs: env.SMTP_DATA_RATE_WINDOW_MS,
      greetingDelayMs: env.SMTP_GREETING_DELAY_MS,
    },
    acceptBatch: { ...defaultBatchLimits, maxMessages: env.SMTP_ACCEPT_BATCH_MESSAGES },
    data: { budget: new DataBudget(env.SMTP_DATA_MEMORY_BYTES), chunkBytes: env.SMTP_DATA_CHUNK_BYTES },
    ...(env.SMTP_TLS_CERT && env.SMTP_TLS_KEY
      ? { tls: { cert: readFileSync(env.SMTP_TLS_CERT), key: readFileSync(env.SMTP_TLS_KEY) } }
      : {}),
  });
  // Take mail only once Postgres and Redis answer; a dependency gone past STARTUP_TIMEOUT_MS or a
  // port that cannot be bound ends the process with one line (a pod that takes no mail must not look up).
  await awaitDependencies(
    [
      postgresDependency(env.DATABASE_URL, () => poolOf(prisma).query("SELECT 1")),
      redisDependency(env.REDIS_URL, redis),
    ],
    env.STARTUP_TIMEOUT_MS,
    (name, error) => logger.warn({ error }, `waiting for ${name} before listening`),
  );
  const stagingPurge = startStagingPurge(
    poolOf(prisma),
    logger,
    env.SPOOL_STAGING_TTL_MS,
    Math.min(env.SPOOL_STAGING_TTL_MS, 600_000),
  );
  await listen(server.server, env.SMTP_PORT, env.SMTP_HOST);
  logger.info(
    { host: env.SMTP_HOST, port: env.SMTP_PORT },
    `smtp-ingest listening on ${env.SMTP_HOST}:${env.SMTP_PORT}`,
  );
  // Started (listening, consuming): from now on /readyz answers on the dependencies' health.
  obs.health.started();
  installShutdown(
    logger,
    [
      // First: readiness turns false, so load balancers and probes see the drain.
      { name: "readiness", close: () => obs.drain() },
      {
        name: "smtp",
        close: () =>
          new Promise<void>((resolve) => {
            server.shuttingDown();
            // The purge schedule stops now; a purge in flight is awaited with the connections.
            const purgeStopped = stagingPurge.close();
            server.close(() => resolve(purgeStopped));
          }),
      },
      { name: "queue", close: () => queue.close() },
      { name: "redis", close: () => redis.quit() },
      { name: "prisma", close: () => prisma.$disconnect() },
      { name: "health", close: () => obs.close() },
    ],
    env.SHUTDOWN_TIMEOUT_MS,
  );
} catch (err) {
  fatal(bootLogger, err);
}
