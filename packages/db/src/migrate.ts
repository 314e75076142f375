import { createHash, randomUUID } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { connectClient } from "./pool.ts";

/**
 * Applies prisma/migrations/<ts>_<name>/migration.sql in order and keeps Prisma's own
 * `_prisma_migrations` bookkeeping (same table, same sha256 checksums), so this runner and
 * `prisma migrate deploy` on a connected machine are interchangeable. Prisma 7's migrate needs a
 * native engine that cannot be downloaded here; this needs only a Postgres connection.
 */
export type MigrateResult = { applied: string[]; alreadyApplied: string[] };

const BOOKKEEPING_DDL = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

// Any constant works; it only has to be the same for every process that migrates this database.
const LOCK_KEY = 72_707_369;

export function listMigrations(migrationsDir: string): { name: string; sql: string; checksum: string }[] {
  return readdirSync(migrationsDir)
    .filter((name) => statSync(join(migrationsDir, name)).isDirectory())
    .sort()
    .map((name) => {
      const sql = readFileSync(join(migrationsDir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

export async function migrate(databaseUrl: string, migrationsDir: string): Promise<MigrateResult> {
  await ensureDatabase(databaseUrl);
  const client = await connectClient(databaseUrl);
  try {
    await client.query("SELECT pg_advisory_lock($1)", [LOCK_KEY]);
    await client.query(BOOKKEEPING_DDL);
    const rows = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
    );
    const done = new Map(rows.rows.map((r) => [r.migration_name, r]));
    const result: MigrateResult = { applied: [], alreadyApplied: [] };
    for (const m of listMigrations(migrationsDir)) {
      const row = done.get(m.name);
      if (row?.finished_at) {
        if (row.checksum !== m.checksum) {
          throw new Error(`migration ${m.name} was edited after it was applied (checksum differs)`);
        }
        result.alreadyApplied.push(m.name);
        continue;
      }
      if (row) throw new Error(`migration ${m.name} failed earlier and needs manual repair`);
      await client.query("BEGIN");
      try {
        const id = randomUUID();
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())`,
          [id, m.checksum, m.name],
        );
        await client.query(m.sql);
        await client.query(
          `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
          [id],
        );
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        throw new Error(`migration ${m.name} failed: ${(err as Error).message}`);
      }
      result.applied.push(m.name);
    }
    return result;
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

/** Creates the target database when it does not exist yet, so a fresh machine needs no manual step. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ""));
  if (!name) return;
  url.pathname = "/postgres";
  const admin = await connectClient(url.toString());
  try {
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (exists.rowCount === 0) {
      await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== "42P04") throw err; // created concurrently by another process
      });
    }
  } finally {
    await admin.end();
  }
}
