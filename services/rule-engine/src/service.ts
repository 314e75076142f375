import { poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import {
  type BootDeps,
  bootWorker,
  type Registry,
  type RunningService,
  serviceStarted,
  type WorkerBoot,
} from "@mailroom/observability";
import { createEventPublisher, logPublishFailure } from "@mailroom/queues";
import { drainBudgetMs } from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import { startTracing } from "@mailroom/tracing";
import type { RuleEngineEnv } from "./env.ts";
import { createRuleEngineMetrics } from "./metrics.ts";
import { createParser } from "./parse.ts";
import { createDnsResolve } from "./resolver.ts";
import { createRspamdScanner } from "./spam.ts";
import type { DnsResolve } from "./verdicts.ts";
import { createClamdScanner, unconfiguredVirusScanner, type VirusScanner } from "./virus.ts";
import { startRuleEngine } from "./worker.ts";

/** What a test (the in-process stack) hands in instead of what the rule engine would make from its env. */
export type RuleEngineServiceDeps = BootDeps<WorkerBoot> & {
  /** DNS for SPF/DKIM/DMARC; absent: the caching resolver on DNS_SERVERS. */
  resolver?: DnsResolve;
};

/** Shutdown in order: readiness, the worker, the parser, queues, byte store, then what the boot made. */
export type RuleEngineService = RunningService;

/** The rule-engine process (queue `inbound`), wired once for main.ts and the test stack. */
export async function startRuleEngineService(
  env: RuleEngineEnv,
  deps: RuleEngineServiceDeps = {},
): Promise<RuleEngineService> {
  // Logger, Prisma, health port, Redis connections, the wait for Postgres and Redis, readiness checks.
  const boot = deps.boot ?? (await bootWorker("rule-engine", env));
  const { logger, prisma, obs, redisConnections, workerRedis, producerRedis } = boot;
  const inboundQueue = redisConnections.queue("inbound", producerRedis);
  const deliveryQueue = redisConnections.queue("delivery", producerRedis);
  // Deliveries to email destinations go to their own queue (the outbound-sender forwards them).
  const forwardQueue = redisConnections.queue("forward", producerRedis);
  // The parser (a pool of worker threads) is made here, once, and closed after the worker.
  const parser = createParser({ threads: env.RULE_ENGINE_CONCURRENCY, timeoutMs: env.PARSE_TIMEOUT_MS });
  const bytes = createByteStore(byteStoreConfig(env), poolOf(prisma));
  // A span per processed recipient when OTEL_EXPORTER_OTLP_ENDPOINT is set (no SDK loaded otherwise).
  const tracing = await startTracing("rule-engine", env, logger);
  const engine = startRuleEngine({
    tracing,
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
    // Running jobs may use SHUTDOWN_TIMEOUT_MS less what the rest of the shutdown needs.
    drainMs: drainBudgetMs(env.SHUTDOWN_TIMEOUT_MS),
    parser,
    ...spamScanner(env),
    virus: virusScanner(env, logger, obs.registry),
    trustedArcSealers: env.ARC_TRUSTED_SEALERS,
    resolver: deps.resolver ?? dnsResolve(env),
    mtaHostname: env.SMTP_HOSTNAME,
    events: createEventPublisher(producerRedis, env.REDIS_PREFIX, logPublishFailure(logger)),
  });
  logger.info({ concurrency: env.RULE_ENGINE_CONCURRENCY }, "rule-engine consuming queue inbound");
  return serviceStarted(boot, deps.boot, [
    { name: "worker", close: () => engine.close() },
    { name: "parser", close: () => parser.close() },
    { name: "queues", close: () => Promise.all([inboundQueue.close(), deliveryQueue.close(), forwardQueue.close()]) },
    { name: "byte store", close: () => bytes.close() },
    { name: "tracing", close: () => tracing.shutdown() },
  ]);
}

/** RSPAMD_URL set: messages are scored by that rspamd; unset: no spam verdict. */
function spamScanner(env: RuleEngineEnv) {
  if (!env.RSPAMD_URL) return {};
  const password = env.RSPAMD_PASSWORD ? { password: env.RSPAMD_PASSWORD } : {};
  return { spam: createRspamdScanner({ url: env.RSPAMD_URL, ...password }) };
}

/** CLAMD_URL set: every message is scanned by that clamd; unset: GRAY "not configured", counted. */
function virusScanner(env: RuleEngineEnv, logger: Logger, registry: Registry): VirusScanner {
  if (!env.CLAMD_URL) {
    logger.info("CLAMD_URL is not set: virus verdicts are GRAY");
    return unconfiguredVirusScanner(registry);
  }
  return createClamdScanner({ address: env.CLAMD_URL, timeoutMs: env.CLAMD_TIMEOUT_MS, logger, registry });
}

/** The caching resolver behind SPF/DKIM/DMARC, on DNS_SERVERS (default: the system's). */
function dnsResolve(env: RuleEngineEnv): DnsResolve {
  return createDnsResolve(env.DNS_SERVERS, {
    maxEntries: env.DNS_CACHE_SIZE,
    maxTtlS: env.DNS_CACHE_MAX_TTL_S,
    negativeTtlMaxS: env.DNS_NEGATIVE_TTL_MAX_S,
    errorTtlMs: env.DNS_ERROR_TTL_MS,
    maxInFlight: env.DNS_MAX_IN_FLIGHT,
    timeoutMs: env.DNS_TIMEOUT_MS,
  });
}
