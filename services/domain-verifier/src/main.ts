import { createPrisma, poolOf } from "@mailroom/db";
import { createDomainDns, startVerifier } from "@mailroom/domain-verification";
import { createLogger } from "@mailroom/log";
import { awaitDependencies, fatal, installShutdown, postgresDependency } from "@mailroom/runtime";
import { loadVerifierEnv } from "./env.ts";

const bootLogger = createLogger("domain-verifier");
try {
  const env = loadVerifierEnv();
  const logger = createLogger("domain-verifier", env.LOG_LEVEL);
  const prisma = createPrisma(env.DATABASE_URL);
  // Work only once Postgres answers; past STARTUP_TIMEOUT_MS exit with one line (and be restarted).
  await awaitDependencies(
    [postgresDependency(env.DATABASE_URL, () => poolOf(prisma).query("SELECT 1"))],
    env.STARTUP_TIMEOUT_MS,
    (name, error) => logger.warn({ error }, `waiting for ${name}`),
  );
  const verifier = startVerifier({
    prisma,
    logger,
    dns: createDomainDns({ servers: env.DNS_SERVERS, timeoutMs: env.DNS_TIMEOUT_MS, tries: env.DNS_TRIES }),
    pollIntervalMs: env.VERIFY_POLL_INTERVAL_MS,
    batchSize: env.VERIFY_BATCH_SIZE,
    concurrency: env.VERIFY_CONCURRENCY,
    leaseMs: env.VERIFY_LEASE_MS,
  });
  logger.info(
    { dnsServers: env.DNS_SERVERS.length ? env.DNS_SERVERS : "system", pollIntervalMs: env.VERIFY_POLL_INTERVAL_MS },
    "domain-verifier checking pending and verified domains",
  );
  installShutdown(
    logger,
    [
      { name: "verifier", close: () => verifier.close() },
      { name: "prisma", close: () => prisma.$disconnect() },
    ],
    env.SHUTDOWN_TIMEOUT_MS,
  );
} catch (err) {
  fatal(bootLogger, err);
}
