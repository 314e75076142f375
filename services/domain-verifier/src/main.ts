import { createPrisma, poolOf } from "@mailroom/db";
import { createDomainDns, startVerifier } from "@mailroom/domain-verification";
import { createLogger } from "@mailroom/log";
import { startObservability } from "@mailroom/observability";
import { startRetention } from "@mailroom/retention";
import { awaitDependencies, fatal, installShutdown, postgresDependency } from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import { loadVerifierEnv } from "./env.ts";
import { domainCheckCounter, retentionCounter } from "./metrics.ts";

const bootLogger = createLogger("domain-verifier");
try {
  const env = loadVerifierEnv();
  const logger = createLogger("domain-verifier", env.LOG_LEVEL);
  // One connection per verification lane, plus the retention pass's lock holder and batch.
  const prisma = createPrisma(env.DATABASE_URL, { max: env.VERIFY_CONCURRENCY + 4 });
  // The health/metrics port first: probes answer (not ready yet) while dependencies are awaited.
  const obs = await startObservability("domain-verifier", logger, env);
  obs.health.addCheck("postgres", () => prisma.$queryRaw`SELECT 1`);
  // Work only once Postgres answers; past STARTUP_TIMEOUT_MS exit with one line (and be restarted).
  await awaitDependencies(
    [postgresDependency(env.DATABASE_URL, () => poolOf(prisma).query("SELECT 1"))],
    env.STARTUP_TIMEOUT_MS,
    (name, error) => logger.warn({ error }, `waiting for ${name}`),
  );
  const verifier = startVerifier({
    prisma,
    onChecked: domainCheckCounter(obs.registry),
    logger,
    dns: createDomainDns({ servers: env.DNS_SERVERS, timeoutMs: env.DNS_TIMEOUT_MS, tries: env.DNS_TRIES }),
    pollIntervalMs: env.VERIFY_POLL_INTERVAL_MS,
    batchSize: env.VERIFY_BATCH_SIZE,
    concurrency: env.VERIFY_CONCURRENCY,
    leaseMs: env.VERIFY_LEASE_MS,
  });
  // Retention runs here because this service already does scheduled Postgres-only work; replicas
  // take turns through an advisory lock (docs/decisions.md).
  // With BYTE_STORE=s3 each retention batch deletes its objects before it commits (@mailroom/retention).
  const bytes = createByteStore(byteStoreConfig(env), poolOf(prisma));
  const retention =
    env.RETENTION_INTERVAL_MS > 0
      ? startRetention({
          pool: poolOf(prisma),
          logger,
          batchSize: env.RETENTION_BATCH_SIZE,
          intervalMs: env.RETENTION_INTERVAL_MS,
          onBatch: retentionCounter(obs.registry),
          bytes,
        })
      : null;
  logger.info(
    { dnsServers: env.DNS_SERVERS.length ? env.DNS_SERVERS : "system", pollIntervalMs: env.VERIFY_POLL_INTERVAL_MS },
    "domain-verifier checking pending and verified domains",
  );
  // Started (listening, consuming): from now on /readyz answers on the dependencies' health.
  obs.health.started();
  installShutdown(
    logger,
    [
      // First: readiness turns false, so load balancers and probes see the drain.
      { name: "readiness", close: () => obs.drain() },
      { name: "verifier", close: () => verifier.close() },
      { name: "retention", close: () => retention?.close() },
      { name: "byte store", close: () => bytes.close() },
      { name: "prisma", close: () => prisma.$disconnect() },
      { name: "health", close: () => obs.close() },
    ],
    env.SHUTDOWN_TIMEOUT_MS,
  );
} catch (err) {
  fatal(bootLogger, err);
}
