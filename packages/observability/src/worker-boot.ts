import { createPrisma, type PrismaClient, poolOf, schemaReadiness } from "@mailroom/db";
import { createLogger, type Logger } from "@mailroom/log";
import { createRedisConnections, type RedisClient, type RedisConnections } from "@mailroom/queues";
import { awaitDependencies, postgresDependency, redisDependency, type ShutdownStep } from "@mailroom/runtime";
import { redisReadiness } from "./health.ts";
import { type HealthSettings, type Observability, startObservability } from "./observability.ts";

/** The settings every queue worker reads (each service's env.ts validates them). */
export type WorkerBootSettings = HealthSettings & {
  LOG_LEVEL: string;
  DATABASE_URL: string;
  REDIS_URL: string;
  REDIS_PREFIX: string;
  STARTUP_TIMEOUT_MS: number;
};

export type WorkerBoot = {
  logger: Logger;
  prisma: PrismaClient;
  obs: Observability;
  redisConnections: RedisConnections;
  /** The connection BullMQ workers block on. */
  workerRedis: RedisClient;
  /** The connection for queue producers, events and readiness. */
  producerRedis: RedisClient;
};

/**
 * What a service that takes requests (API, SMTP) runs on: no blocking worker connection, and a
 * producer connection that fails fast while Redis is down (HTTP 503; SMTP accepts without the
 * wake-up, which the rule engine's sweeper makes up for), not a hang.
 */
export type ProducerBoot = Omit<WorkerBoot, "workerRedis">;

/**
 * The start of every queue worker's main.ts, written once: logger, Prisma, the health/metrics port
 * (first, so probes answer "not ready" while dependencies are awaited), Redis connections with their
 * errors in the rate-limited dependency-error log, then waiting for Postgres and Redis (past
 * STARTUP_TIMEOUT_MS the caller's `fatal` exits with one line), and the readiness checks.
 */
export async function bootWorker(service: string, env: WorkerBootSettings): Promise<WorkerBoot> {
  const { logger, prisma, obs, redisConnections } = await bootBase(service, env);
  const workerRedis = redisConnections.connect("worker");
  const producerRedis = redisConnections.connect("worker");
  await ready({ logger, prisma, obs, redisConnections, producerRedis }, env, [workerRedis], "");
  return { logger, prisma, obs, redisConnections, workerRedis, producerRedis };
}

/** bootWorker for the API and SMTP ingest: one producer connection, Prisma's pool sized by the caller. */
export async function bootProducer(
  service: string,
  env: WorkerBootSettings,
  opts: { poolSize?: number } = {},
): Promise<ProducerBoot> {
  const base = await bootBase(service, env, opts.poolSize);
  const boot = { ...base, producerRedis: base.redisConnections.connect("producer") };
  await ready(boot, env, [], " before listening");
  return boot;
}

/**
 * The shutdown steps of what a boot made, after the service's own: Redis, Prisma, then the health
 * port last, so probes see "draining" until the process is done.
 */
export function bootSteps(boot: ProducerBoot & { workerRedis?: RedisClient }): ShutdownStep[] {
  const { workerRedis, producerRedis } = boot;
  return [
    { name: "redis", close: () => Promise.all([workerRedis?.quit(), producerRedis.quit()]) },
    { name: "prisma", close: () => boot.prisma.$disconnect() },
    { name: "health", close: () => boot.obs.close() },
  ];
}

async function bootBase(service: string, env: WorkerBootSettings, poolSize?: number) {
  const logger = createLogger(service, env.LOG_LEVEL);
  const obs = await startObservability(service, logger, env);
  const prisma = createPrisma(env.DATABASE_URL, {
    ...(poolSize ? { max: poolSize } : {}),
    onIdleError: (err) => obs.errors.report("postgres", err, { source: "idle connection" }),
  });
  const redisConnections = createRedisConnections({
    url: env.REDIS_URL,
    prefix: env.REDIS_PREFIX,
    logger,
    onError: (err, source) => obs.errors.report("redis", err, { source }),
  });
  return { logger, prisma, obs, redisConnections };
}

/** Waits for Postgres and Redis, then adds their readiness checks and the schema's. */
async function ready(boot: ProducerBoot, env: WorkerBootSettings, more: RedisClient[], until: string) {
  const { logger, prisma, obs, producerRedis } = boot;
  await awaitDependencies(
    [
      postgresDependency(env.DATABASE_URL, () => poolOf(prisma).query("SELECT 1")),
      redisDependency(env.REDIS_URL, producerRedis, ...more),
    ],
    env.STARTUP_TIMEOUT_MS,
    (name, error) => logger.warn({ error }, `waiting for ${name}${until}`),
  );
  obs.health.addCheck("postgres", () => prisma.$queryRaw`SELECT 1`);
  // Not ready until the database has every migration this build expects (named in /readyz).
  obs.health.addCheck("schema", schemaReadiness(poolOf(prisma)));
  obs.health.addCheck("redis", redisReadiness(producerRedis));
  producerRedis.on("ready", () => obs.errors.recovered("redis"));
}
