import { randomBytes } from "node:crypto";
import { connectClient } from "@mailroom/db";
import { Redis } from "ioredis";
import { withDatabase } from "./servers.ts";

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run tests through jest (npm test), whose global setup sets it`);
  return v;
}

export type TestEnv = {
  databaseUrl: string;
  redisUrl: string;
  /** Redis key prefix private to this test file (BullMQ `prefix`, rate-limit keys). */
  redisPrefix: string;
  /** Deletes this file's Redis keys. The database is dropped by the global teardown. */
  cleanup(): Promise<void>;
};

/**
 * How long a test harness's shared Postgres pool (the in-process stack's, the ingest pipeline's,
 * the dispatcher harness's) lets a query wait for a connection. Production's 5 s makes a dead
 * Postgres fail fast; these pools only ever talk to the shared server, which is never stopped,
 * and a handful of connections serve every in-process service and the test's own seeding at
 * once: on a loaded machine a burst (30 seeded emails beside the API's requests) waited past 5 s
 * for a free connection and failed with "timeout exceeded when trying to connect".
 */
export const HARNESS_POOL_WAIT_MS = 60_000;

/**
 * A fresh database (a clone of the migrated template) and a private Redis prefix for one test file.
 * Call it in `beforeAll`.
 */
export async function createTestEnv(): Promise<TestEnv> {
  const base = required("MAILROOM_TEST_PG");
  const template = required("MAILROOM_TEST_TEMPLATE");
  const runId = required("MAILROOM_TEST_RUN");
  const redisUrl = required("MAILROOM_TEST_REDIS");
  const suffix = randomBytes(4).toString("hex");
  const name = `mailroom_test_${runId}_${suffix}`;
  const admin = await connectClient(withDatabase(base, "postgres"));
  try {
    // CREATE DATABASE … TEMPLATE needs the template to have no other sessions; retry briefly.
    for (let i = 0; ; i++) {
      try {
        await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        break;
      } catch (err) {
        if (i >= 20 || (err as { code?: string }).code !== "55006") throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  const redisPrefix = `mailroom-test:${runId}:${suffix}`;
  return {
    databaseUrl: withDatabase(base, name),
    redisUrl,
    redisPrefix,
    async cleanup() {
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      try {
        let cursor = "0";
        do {
          const [next, keys] = await redis.scan(cursor, "MATCH", `${redisPrefix}:*`, "COUNT", 500);
          cursor = next;
          if (keys.length) await redis.del(...keys);
        } while (cursor !== "0");
      } finally {
        redis.disconnect();
      }
    },
  };
}

/**
 * A database with nothing in it (not even the migrations' bookkeeping table): what a service meets
 * before the migration Job ran. Dropped by the global teardown like the test databases.
 */
export async function createEmptyDatabase(): Promise<string> {
  const base = required("MAILROOM_TEST_PG");
  const name = `mailroom_test_${required("MAILROOM_TEST_RUN")}_empty_${randomBytes(4).toString("hex")}`;
  const admin = await connectClient(withDatabase(base, "postgres"));
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return withDatabase(base, name);
}

/**
 * Polls `probe` until it returns a non-undefined value or the deadline passes. No blind sleeps.
 * The default deadline is generous: it only matters when the condition never comes, and CI's
 * 2 cores may be busy enough that a message takes many seconds through the pipeline.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false>,
  { timeoutMs = 45_000, intervalMs = 50, what = "condition" } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
