import { createPrisma, type PrismaClient, poolOf } from "@mailroom/db";
import { createLogger, type Logger } from "@mailroom/log";
import { createRedisConnections, type RedisClient, type RedisConnections } from "@mailroom/queues";
import { awaitDependencies, postgresDependency, redisDependency } from "@mailroom/runtime";
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
 * The start of every queue worker's main.ts, written once: logger, Prisma, the health/metrics port
 * (first, so probes answer "not ready" while dependencies are awaited), Redis connections with their
 * errors in the rate-limited dependency-error log, then waiting for Postgres and Redis (past
 * STARTUP_TIMEOUT_MS the caller's `fatal` exits with one line), and the readiness checks.
 */
export async function bootWorker(service: string, env: WorkerBootSettings): Promise<WorkerBoot> {
  const logger = createLogger(service, env.LOG_LEVEL);
  const prisma = createPrisma(env.DATABASE_URL);
  const obs = await startObservability(service, logger, env);
  const redisConnections = createRedisConnections({
    url: env.REDIS_URL,
    prefix: env.REDIS_PREFIX,
    logger,
    onError: (err, source) => obs.errors.report("redis", err, { source }),
  });
  const workerRedis = redisConnections.connect("worker");
  const producerRedis = redisConnections.connect("worker");
  await awaitDependencies(
    [
      postgresDependency(env.DATABASE_URL, () => poolOf(prisma).query("SELECT 1")),
      redisDependency(env.REDIS_URL, producerRedis, workerRedis),
    ],
    env.STARTUP_TIMEOUT_MS,
    (name, error) => logger.warn({ error }, `waiting for ${name}`),
  );
  obs.health.addCheck("postgres", () => prisma.$queryRaw`SELECT 1`);
  obs.health.addCheck("redis", redisReadiness(producerRedis));
  producerRedis.on("ready", () => obs.errors.recovered("redis"));
  return { logger, prisma, obs, redisConnections, workerRedis, producerRedis };
}
