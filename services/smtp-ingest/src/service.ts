import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { type BootDeps, bootProducer, type RunningService, serviceStarted } from "@mailroom/observability";
import { drainBudgetMs, listen } from "@mailroom/runtime";
import { startTracing } from "@mailroom/tracing";
import { defaultBatchLimits } from "./accept-batch.ts";
import { DataBudget } from "./data-budget.ts";
import type { IngestEnv } from "./env.ts";
import { observeRouteCache } from "./metrics.ts";
import type { Lookup } from "./rcpt-lookup.ts";
import { RouteCache } from "./route-cache.ts";
import { listenForRouteChanges, type RouteListener } from "./route-listener.ts";
import { createIngestServer, type IngestOptions } from "./server.ts";
import { startStagingPurge } from "./staging.ts";

/** What a test (the in-process stack) hands in instead of what the ingest would make from its env. */
export type IngestServiceDeps = BootDeps & {
  /** Server options on top of those read from the env (a test's short drain budget). */
  server?: Partial<IngestOptions>;
};

/** Shutdown in order: readiness, SMTP intake (and the staging purge), the queue, then what the boot made. */
export type IngestService = RunningService & {
  server: ReturnType<typeof createIngestServer>;
  /** The port it listens on (the one chosen when SMTP_PORT is 0). */
  port: number;
  /** The RCPT route cache; absent when SMTP_RCPT_CACHE_TTL_MS is 0. */
  routes?: RouteCache;
};

/** The SMTP ingest process, wired once for main.ts and the test stack. */
export async function startIngestService(env: IngestEnv, deps: IngestServiceDeps = {}): Promise<IngestService> {
  // Take mail only once Postgres and Redis answer; a dependency gone past STARTUP_TIMEOUT_MS or a
  // port that cannot be bound ends the process with one line (a pod that takes no mail must not look up).
  const boot = deps.boot ?? (await bootProducer("smtp-ingest", env, { poolSize: env.DATABASE_POOL_SIZE }));
  const { logger, prisma, obs } = boot;
  const queue = boot.redisConnections.queue("inbound", boot.producerRedis);
  // A span per mail transaction when OTEL_EXPORTER_OTLP_ENDPOINT is set (no SDK loaded otherwise).
  const tracing = await startTracing("smtp-ingest", env, logger);
  const routes = routeCache(env, logger);
  const server = createIngestServer({
    ...ingestOptions(env),
    ...(routes ? { rcptLookup: routes.wrap } : {}),
    prisma,
    registry: obs.registry,
    queue,
    logger,
    tracing,
    ...deps.server,
  });
  if (routes?.cache) observeRouteCache(obs.registry, routes.cache);
  const purgeEveryMs = Math.min(env.SPOOL_STAGING_TTL_MS, 600_000);
  const stagingPurge = startStagingPurge(poolOf(prisma), logger, env.SPOOL_STAGING_TTL_MS, purgeEveryMs);
  await listen(server.server, env.SMTP_PORT, env.SMTP_HOST, "SMTP_PORT");
  const port = (server.server.address() as AddressInfo).port;
  logger.info({ host: env.SMTP_HOST, port }, `smtp-ingest listening on ${env.SMTP_HOST}:${port}`);
  const closeSmtp = async () => {
    // The purge schedule stops now; a purge in flight is awaited with the sessions.
    const purgeStopped = stagingPurge.close();
    await server.drain();
    await purgeStopped;
  };
  const service = serviceStarted(boot, deps.boot, [
    { name: "smtp", close: closeSmtp },
    { name: "queue", close: () => queue.close() },
    { name: "rcpt routes", close: () => routes?.listener?.close() },
    { name: "tracing", close: () => tracing.shutdown() },
  ]);
  return { ...service, server, port, ...(routes?.cache ? { routes: routes.cache } : {}) };
}

/**
 * RCPT routes cached, dropped on Postgres notifications (route-cache.ts, route-listener.ts). Made
 * with the server; until the listener has said LISTEN, lookups read Postgres.
 */
function routeCache(env: IngestEnv, logger: Logger) {
  if (env.SMTP_RCPT_CACHE_TTL_MS === 0) return undefined;
  const made: { cache?: RouteCache; listener?: RouteListener; wrap: (grouped: Lookup) => Lookup } = {
    wrap: (grouped) => {
      const cache = new RouteCache(grouped, { ttlMs: env.SMTP_RCPT_CACHE_TTL_MS });
      made.cache = cache;
      made.listener = listenForRouteChanges(env.DATABASE_URL, cache, logger);
      return cache.lookup;
    },
  };
  return made;
}

/** The server's settings as the env gives them (limits, slow-client policy, batching, TLS). */
function ingestOptions(env: IngestEnv): Omit<IngestOptions, "prisma" | "queue" | "logger" | "registry"> {
  return {
    hostname: env.SMTP_HOSTNAME,
    ...(env.SMTP_POSTMASTER_DOMAIN ? { postmasterDomain: env.SMTP_POSTMASTER_DOMAIN } : {}),
    ...(env.SMTP_PROXY_PROTOCOL ? { proxyProtocol: { trustedCidrs: env.SMTP_PROXY_TRUSTED_CIDRS } } : {}),
    maxMessageBytes: env.MAX_MESSAGE_BYTES,
    // Open transactions may use SHUTDOWN_TIMEOUT_MS less what the rest of the shutdown needs.
    drainBudgetMs: drainBudgetMs(env.SHUTDOWN_TIMEOUT_MS),
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
  };
}
