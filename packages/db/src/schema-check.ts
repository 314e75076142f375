import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Queryable } from "./blobs.ts";
import { migrationsDir as bundledMigrations } from "./paths.ts";

/** How many missing migrations a message names before it says "and N more". */
const NAMED = 5;

/** The migrations a build expects: the folder names bundled with it (prisma/migrations), in order. */
export function expectedMigrations(dir: string = bundledMigrations): string[] {
  return readdirSync(dir)
    .filter((name) => statSync(join(dir, name)).isDirectory())
    .sort();
}

/**
 * The migrations of `expected` that the database has not finished applying, read from Prisma's
 * bookkeeping table (the one the migrate CLI keeps). A database without that table lacks them all.
 * Migrations the database has and this build does not know are fine: a newer release ran them, and
 * migrations are additive (docs/operations.md, "Upgrades and migrations").
 */
export async function missingMigrations(db: Queryable, expected: readonly string[]): Promise<string[]> {
  let applied: Set<string>;
  try {
    const rows = await db.query<{ migration_name: string }>(
      `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    );
    applied = new Set(rows.rows.map((r) => r.migration_name));
  } catch (err) {
    if ((err as { code?: string }).code !== "42P01") throw err; // 42P01: no such table, nothing migrated
    applied = new Set();
  }
  return expected.filter((name) => !applied.has(name));
}

/** One line naming what is missing, for /readyz and the wait-for-schema log. */
export function missingMigrationsText(missing: readonly string[], expected: readonly string[]): string {
  const named = missing.slice(0, NAMED).join(", ");
  const more = missing.length > NAMED ? ` and ${missing.length - NAMED} more` : "";
  return `${missing.length} of ${expected.length} migrations not applied: ${named}${more} (run the migrations: node packages/db/src/migrate-cli.js)`;
}

/**
 * A readiness check: resolves once the database has every migration this build bundles, rejects
 * naming the missing ones until then. The folder is read once; the database only until the schema
 * is complete (migrations are never taken back), so a ready service pays nothing per probe.
 */
export function schemaReadiness(db: Queryable, dir: string = bundledMigrations): () => Promise<void> {
  let expected: string[] | null = null;
  let satisfied = false;
  return async () => {
    if (satisfied) return;
    expected ??= expectedMigrations(dir);
    const missing = await missingMigrations(db, expected);
    if (missing.length) throw new Error(missingMigrationsText(missing, expected));
    satisfied = true;
  };
}
