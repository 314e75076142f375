import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createEmptyDatabase } from "@mailroom/testing";
import pg from "pg";
import { listMigrations, migrate } from "./migrate.ts";
import { migrationsDir } from "./paths.ts";
import { expectedMigrations, missingMigrations, schemaReadiness } from "./schema-check.ts";

/** A migrations folder holding only the first `n` of ours: the schema of an older release. */
function olderRelease(n: number): string {
  const dir = mkdtempSync(join(tmpdir(), "mailroom-migrations-"));
  for (const m of listMigrations(migrationsDir).slice(0, n))
    cpSync(join(migrationsDir, m.name), join(dir, m.name), { recursive: true });
  return dir;
}

describe("the schema this build expects", () => {
  const all = expectedMigrations();
  const dirs: string[] = [];
  let pool: pg.Pool;
  let url: string;
  beforeAll(async () => {
    url = await createEmptyDatabase();
    pool = new pg.Pool({ connectionString: url, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("is every migration folder bundled with the build, in order", () => {
    expect(all.length).toBeGreaterThan(10);
    expect(all).toEqual(listMigrations(migrationsDir).map((m) => m.name));
    expect([...all].sort()).toEqual(all);
  });

  it("an unmigrated database lacks them all, a partly migrated one the rest, a migrated one none", async () => {
    const check = schemaReadiness(pool);
    expect(await missingMigrations(pool, all)).toEqual(all);
    await expect(check()).rejects.toThrow(
      new RegExp(`^${all.length} of ${all.length} migrations not applied: ${all[0]}, .* and ${all.length - 5} more`),
    );

    const older = olderRelease(all.length - 2);
    dirs.push(older);
    await migrate(url, older);
    expect(await missingMigrations(pool, all)).toEqual(all.slice(-2));
    await expect(check()).rejects.toThrow(`2 of ${all.length} migrations not applied: ${all.slice(-2).join(", ")} (`);

    await migrate(url, migrationsDir);
    expect(await missingMigrations(pool, all)).toEqual([]);
    await expect(check()).resolves.toBeUndefined();
  });

  it("a migration that started and did not finish is still missing", async () => {
    const last = all.at(-1) as string;
    await pool.query(`UPDATE "_prisma_migrations" SET finished_at = NULL WHERE migration_name = $1`, [last]);
    try {
      expect(await missingMigrations(pool, all)).toEqual([last]);
    } finally {
      await pool.query(`UPDATE "_prisma_migrations" SET finished_at = now() WHERE migration_name = $1`, [last]);
    }
  });

  it("once satisfied, a check does not ask the database again (migrations are never taken back)", async () => {
    const check = schemaReadiness(pool);
    await check();
    await pool.query(`ALTER TABLE "_prisma_migrations" RENAME TO "_prisma_migrations_moved"`);
    try {
      await expect(check()).resolves.toBeUndefined();
      // A new check (a new process) does ask, and finds nothing applied.
      await expect(schemaReadiness(pool)()).rejects.toThrow(/migrations not applied/);
    } finally {
      await pool.query(`ALTER TABLE "_prisma_migrations_moved" RENAME TO "_prisma_migrations"`);
    }
  });

  it("newer migrations than the build knows (a later release ran) do not make it unready", async () => {
    const older = olderRelease(3);
    dirs.push(older);
    await expect(schemaReadiness(pool, older)()).resolves.toBeUndefined();
  });
});
