import { randomBytes } from "node:crypto";
import { migrate, migrationsDir } from "../../db/src/index.ts";
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

  const template = `mailroom_test_${runId}_tpl`;
  await migrate(withDatabase(databaseUrl, template), migrationsDir);

  process.env.MAILROOM_TEST_RUN = runId;
  process.env.MAILROOM_TEST_PG = databaseUrl;
  process.env.MAILROOM_TEST_TEMPLATE = template;
  process.env.MAILROOM_TEST_REDIS = redisUrl;
}
