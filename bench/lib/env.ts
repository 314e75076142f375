// A bench's own world: a fresh database (a clone of a template migrated with the project's runner,
// as the tests get) and a Redis key prefix of its own, both removed at the end.
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { createTestEnv } from "@mailroom/testing";
import globalSetup from "@mailroom/testing/global-setup";
import globalTeardown from "@mailroom/testing/global-teardown";
import pg from "pg";

export type BenchEnv = {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  prisma: PrismaClient;
  pool: pg.Pool;
  /** Variables every mailroom service reads (packages/config commonEnv). */
  serviceEnv: Record<string, string>;
  close(): Promise<void>;
};

/** Postgres and Redis as the tests find them (TEST_DATABASE_URL / TEST_REDIS_URL, else the local defaults). */
export async function benchEnv(name: string): Promise<BenchEnv> {
  await globalSetup();
  const t = await createTestEnv();
  console.log(`${name}: database ${new URL(t.databaseUrl).pathname.slice(1)}, Redis prefix ${t.redisPrefix}`);
  const prisma = createPrisma(t.databaseUrl, { max: 4 });
  const pool = new pg.Pool({ connectionString: t.databaseUrl, max: 20 });
  return {
    databaseUrl: t.databaseUrl,
    redisUrl: t.redisUrl,
    redisPrefix: t.redisPrefix,
    prisma,
    pool,
    // HEALTH_PORT 0: an ephemeral health/metrics port, so benches and tests running side by side
    // (or a stack already on this machine) do not collide on the services' fixed defaults.
    serviceEnv: { DATABASE_URL: t.databaseUrl, REDIS_URL: t.redisUrl, REDIS_PREFIX: t.redisPrefix, HEALTH_PORT: "0" },
    async close() {
      await prisma.$disconnect().catch(() => undefined);
      await pool.end().catch(() => undefined);
      await t.cleanup();
      await globalTeardown();
    },
  };
}
