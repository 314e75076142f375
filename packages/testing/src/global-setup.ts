import { randomBytes } from "node:crypto";
import { connectClient, migrate, migrationsDir } from "@mailroom/db";
import { Redis } from "ioredis";
import { DEFAULT_TEST_DATABASE_URL, DEFAULT_TEST_REDIS_URL, reachable, withDatabase } from "./servers.ts";

/**
 * Runs once per jest run. Finds real Postgres and Redis (TEST_DATABASE_URL / TEST_REDIS_URL, else
 * the local defaults, else testcontainers), migrates a template database once, and hands both to
 * the workers through the environment. Each test file then clones the template (cheap) and uses its
 * own Redis key prefix, so files never see each other's rows or jobs.
 */
export default async function globalSetup(): Promise<void> {
  const runId = `${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;
  let databaseUrl = process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;
  let redisUrl = process.env.TEST_REDIS_URL ?? DEFAULT_TEST_REDIS_URL;

  if (!(await reachable(databaseUrl, 5432))) {
    const { PostgreSqlContainer } = await import("./containers.ts");
    databaseUrl = await PostgreSqlContainer();
  }
  if (!(await reachable(redisUrl, 6379))) {
    const { RedisContainer } = await import("./containers.ts");
    redisUrl = await RedisContainer();
  }

  await dropStaleRuns(databaseUrl);
  await dropStaleRedisKeys(redisUrl);
  const template = `mailroom_test_${runId}_tpl`;
  await migrate(withDatabase(databaseUrl, template), migrationsDir);

  process.env.MAILROOM_TEST_RUN = runId;
  process.env.MAILROOM_TEST_PG = databaseUrl;
  process.env.MAILROOM_TEST_TEMPLATE = template;
  process.env.MAILROOM_TEST_REDIS = redisUrl;
  // Service processes spawned by tests get an ephemeral health/metrics port unless a test picks one:
  // the per-service defaults (9464…) would collide between test files running at once.
  process.env.HEALTH_PORT ??= "0";
}

/**
 * A run killed before its teardown (CI time-out, ^C) leaves its databases behind on the shared
 * server. Run ids start with their start time in base 36; drop what is older than six hours.
 */
async function dropStaleRuns(databaseUrl: string): Promise<void> {
  const client = await connectClient(withDatabase(databaseUrl, "postgres"));
  try {
    const rows = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'mailroom\\_test\\_%'",
    );
    const cutoff = Date.now() - 6 * 3600_000;
    for (const { datname } of rows.rows) {
      const started = Number.parseInt(datname.split("_")[2]?.slice(0, 8) ?? "", 36);
      if (Number.isFinite(started) && started < cutoff) {
        await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
      }
    }
  } finally {
    await client.end();
  }
}

/** The same for Redis keys (`mailroom-test:<runId>:…`) of runs that never cleaned up. */
async function dropStaleRedisKeys(redisUrl: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const cutoff = Date.now() - 6 * 3600_000;
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", "mailroom-test:*", "COUNT", 1000);
      cursor = next;
      const stale = keys.filter((k) => {
        const started = Number.parseInt(k.split(":")[1]?.slice(0, 8) ?? "", 36);
        return Number.isFinite(started) && started < cutoff;
      });
      if (stale.length) await redis.del(...stale);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
