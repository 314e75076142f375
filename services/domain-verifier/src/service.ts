import { createPrisma, poolOf, schemaReadiness } from "@mailroom/db";
import { createDomainDns, type DomainDns, startVerifier } from "@mailroom/domain-verification";
import { createLogger, type Logger } from "@mailroom/log";
import { startObservability, type WorkerBoot } from "@mailroom/observability";
import { startRetention } from "@mailroom/retention";
import { awaitDependencies, closeInOrder, postgresDependency, type ShutdownStep } from "@mailroom/runtime";
import { byteStoreConfig, createByteStore } from "@mailroom/storage";
import type { VerifierEnv } from "./env.ts";
import { domainCheckCounter, retentionCounter } from "./metrics.ts";

/** What this service runs on: Postgres only (no Redis). */
export type VerifierBoot = Pick<WorkerBoot, "logger" | "prisma" | "obs">;

/** What a test (the in-process stack) hands in instead of what the verifier would make from its env. */
export type VerifierServiceDeps = {
  /** Logger, Prisma and health port shared with other services; absent: made here and closed by close(). */
  boot?: VerifierBoot;
  /** DNS for the checks (a loopback DNS server in tests); absent: DNS_SERVERS, DNS_TIMEOUT_MS, DNS_TRIES. */
  dns?: DomainDns;
  /** The checks' clock (a test moves it ahead to skip the first-check delay). */
  now?: () => Date;
};

export type VerifierService = {
  logger: Logger;
  /** Shutdown in order: readiness, the verifier loop, retention, byte store, then what the boot made. */
  steps: ShutdownStep[];
  close(): Promise<void>;
};

/** The domain-verifier process (scheduled DNS checks, and the retention pass), wired once for main.ts and tests. */
export async function startVerifierService(env: VerifierEnv, deps: VerifierServiceDeps = {}): Promise<VerifierService> {
  const boot = deps.boot ?? (await bootVerifier(env));
  const { logger, prisma, obs } = boot;
  const verifier = startVerifier({
    prisma,
    onChecked: domainCheckCounter(obs.registry),
    logger,
    dns: deps.dns ?? createDomainDns({ servers: env.DNS_SERVERS, timeoutMs: env.DNS_TIMEOUT_MS, tries: env.DNS_TRIES }),
    ...(deps.now ? { now: deps.now } : {}),
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
  const steps: ShutdownStep[] = [
    // First: readiness turns false, so load balancers and probes see the drain.
    { name: "readiness", close: () => obs.drain() },
    { name: "verifier", close: () => verifier.close() },
    { name: "retention", close: () => retention?.close() },
    { name: "byte store", close: () => bytes.close() },
    ...(deps.boot
      ? []
      : [
          { name: "prisma", close: () => prisma.$disconnect() },
          { name: "health", close: () => obs.close() },
        ]),
  ];
  return { logger, steps, close: () => closeInOrder(logger, steps) };
}

/** Logger, Prisma (one connection per verification lane, plus retention's lock holder and batch), health port, Postgres awaited. */
async function bootVerifier(env: VerifierEnv): Promise<VerifierBoot> {
  const logger = createLogger("domain-verifier", env.LOG_LEVEL);
  // The health/metrics port first: probes answer (not ready yet) while dependencies are awaited.
  const obs = await startObservability("domain-verifier", logger, env);
  const prisma = createPrisma(env.DATABASE_URL, {
    max: env.VERIFY_CONCURRENCY + 4,
    onIdleError: (err) => obs.errors.report("postgres", err, { source: "idle connection" }),
  });
  obs.health.addCheck("postgres", () => prisma.$queryRaw`SELECT 1`);
  obs.health.addCheck("schema", schemaReadiness(poolOf(prisma)));
  // Work only once Postgres answers; past STARTUP_TIMEOUT_MS exit with one line (and be restarted).
  await awaitDependencies(
    [postgresDependency(env.DATABASE_URL, () => poolOf(prisma).query("SELECT 1"))],
    env.STARTUP_TIMEOUT_MS,
    (name, error) => logger.warn({ error }, `waiting for ${name}`),
  );
  return { logger, prisma, obs };
}
