// A bench's own world: a fresh database migrated with the project's runner and a Redis key prefix
// of its own, both removed at the end. Never touches another database or another prefix.
import { randomBytes } from "node:crypto";
import { createPrisma, ensureDatabase, migrate, migrationsDir, type PrismaClient } from "@mailroom/db";
import { Redis } from "ioredis";
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

const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

export async function benchEnv(name: string): Promise<BenchEnv> {
  const base = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
  const redisUrl = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
  const id = `${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
  const dbName = `mailroom_bench_${name.replace(/\W/g, "_")}_${id}`;
  const databaseUrl = withDatabase(base, dbName);
  await ensureDatabase(databaseUrl);
  await migrate(databaseUrl, migrationsDir);
  const redisPrefix = `mailroom-bench:${name}:${id}`;
  const prisma = createPrisma(databaseUrl, { max: 4 });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 20 });
  return {
    databaseUrl,
    redisUrl,
    redisPrefix,
    prisma,
    pool,
    serviceEnv: { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_PREFIX: redisPrefix },
    async close() {
      await prisma.$disconnect().catch(() => undefined);
      await pool.end().catch(() => undefined);
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      try {
        let cursor = "0";
        do {
          const [next, keys] = await redis.scan(cursor, "MATCH", `${redisPrefix}:*`, "COUNT", 1000);
          cursor = next;
          if (keys.length) await redis.del(...keys);
        } while (cursor !== "0");
      } finally {
        redis.disconnect();
      }
      if (process.env.BENCH_KEEP_DB) return void console.log(`kept database ${dbName}`);
      const admin = new pg.Client({ connectionString: withDatabase(base, "postgres") });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}
