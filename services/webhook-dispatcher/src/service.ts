import { poolOf } from "@mailroom/db";
import { createConnectionPool, createEgressResolver } from "@mailroom/egress";
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
import { attachmentLinks, byteStoreConfig, createByteStore } from "@mailroom/storage";
import { startTracing } from "@mailroom/tracing";
import type { DispatcherEnv } from "./env.ts";
import { createSender } from "./send.ts";
import { startDispatcher } from "./worker.ts";

/** What a test (the in-process stack) hands in instead of what the dispatcher would make from its env. */
export type DispatcherServiceDeps = BootDeps<WorkerBoot>;

/** Shutdown in order: readiness, the worker, keep-alive connections, the queue, byte store, then what the boot made. */
export type DispatcherService = RunningService;

/** The webhook-dispatcher process (queue `delivery`), wired once for main.ts and the test stack. */
export async function startDispatcherService(
  env: DispatcherEnv,
  deps: DispatcherServiceDeps = {},
): Promise<DispatcherService> {
  // Logger, Prisma, health port, Redis connections, the wait for Postgres and Redis, readiness checks.
  const boot = deps.boot ?? (await bootWorker("webhook-dispatcher", env));
  const { logger, prisma, obs, redisConnections, workerRedis, producerRedis } = boot;
  const queue = redisConnections.queue("delivery", producerRedis);
  // The same DNS_SERVERS setup as the API's SSRF check at endpoint creation (createEgressResolver).
  const resolver = createEgressResolver(env.DNS_SERVERS);
  // Keep-alive connections per endpoint, keyed by the addresses checked at each delivery.
  const pool = createConnectionPool();
  // Only links are signed here (no bytes move): with BYTE_STORE=s3 each payload carries presigned URLs.
  const bytes = createByteStore(byteStoreConfig(env), poolOf(prisma));
  const signed = env.SIGNED_URL_SECRET
    ? { publicApiUrl: env.PUBLIC_API_URL, secret: env.SIGNED_URL_SECRET }
    : undefined;
  // A span per delivery attempt when OTEL_EXPORTER_OTLP_ENDPOINT is set (no SDK loaded otherwise).
  const tracing = await startTracing("webhook-dispatcher", env, logger);
  const dispatcher = startDispatcher({
    prisma,
    tracing,
    metrics: createDeliveryMetrics(obs.registry, ["webhook"]),
    queue,
    logger,
    send: createSender({ allowPrivate: env.ALLOW_PRIVATE_DESTINATIONS, resolver, pool }),
    publicApiUrl: env.PUBLIC_API_URL,
    attachmentLinks: attachmentLinks(bytes, env.SIGNED_URL_TTL_SECONDS, signed),
    backoffUnitMs: env.BACKOFF_UNIT_MS,
    connection: workerRedis,
    prefix: env.REDIS_PREFIX,
    concurrency: env.DISPATCHER_CONCURRENCY,
    endpointConcurrency: env.DISPATCHER_ENDPOINT_CONCURRENCY,
    slotsRedis: producerRedis,
    circuitThreshold: env.DISPATCHER_CIRCUIT_THRESHOLD,
    disableAfterMs: env.ENDPOINT_DISABLE_AFTER_MS,
    sweepIntervalMs: env.SWEEP_INTERVAL_MS,
    sweepGraceMs: env.SWEEP_GRACE_MS,
    // Running jobs may use SHUTDOWN_TIMEOUT_MS less what the rest of the shutdown needs.
    drainMs: drainBudgetMs(env.SHUTDOWN_TIMEOUT_MS),
    events: createEventPublisher(producerRedis, env.REDIS_PREFIX, logPublishFailure(logger)),
  });
  logger.info(
    { concurrency: env.DISPATCHER_CONCURRENCY, endpointConcurrency: env.DISPATCHER_ENDPOINT_CONCURRENCY },
    "webhook-dispatcher consuming queue delivery",
  );
  return serviceStarted(boot, deps.boot, [
    { name: "worker", close: () => dispatcher.close() },
    { name: "connections", close: async () => pool.close() },
    { name: "queue", close: () => queue.close() },
    { name: "byte store", close: () => bytes.close() },
    { name: "tracing", close: () => tracing.shutdown() },
  ]);
}
