import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createTestEnv, type TestEnv, withDatabase } from "@mailroom/testing";
import pg from "pg";
// @ts-expect-error: plain .mjs helper shared with scripts/migration-diff.mjs
import { HAND_WRITTEN_INDEXES, migrationSql, prismaDiffScript, root, withUrl } from "../../../scripts/prisma6.mjs";

/**
 * Proves that prisma/migrations (as applied by our offline runner) produce exactly the database
 * that prisma/schema.prisma describes: build one database from the migrations, another from the
 * schema (Prisma's own `migrate diff --from-empty` SQL), and compare their catalogs.
 */

type Catalog = { columns: string[]; indexes: string[]; constraints: string[] };

async function catalog(url: string): Promise<Catalog> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const columns = await c.query(
      `SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,
              character_maximum_length, numeric_precision, datetime_precision
         FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'
        ORDER BY table_name, column_name`,
    );
    const indexes = await c.query(
      `SELECT indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename <> '_prisma_migrations' ORDER BY indexname`,
    );
    const constraints = await c.query(
      `SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def
         FROM pg_constraint WHERE connamespace = 'public'::regnamespace
          AND conrelid::regclass::text <> '"_prisma_migrations"' AND conrelid::regclass::text <> '_prisma_migrations'
        ORDER BY 1, 2`,
    );
    return {
      columns: columns.rows.map((r) => JSON.stringify(r)),
      indexes: indexes.rows
        .filter((r) => !(HAND_WRITTEN_INDEXES as Set<string>).has(r.indexname))
        .map((r) => r.indexdef),
      constraints: constraints.rows.map((r) => `${r.tbl} ${r.conname} ${r.def}`),
    };
  } finally {
    await c.end();
  }
}

/** A fresh database built from Prisma's own SQL for `schemaPath` (`migrate diff --from-empty`). */
async function databaseFromSchema(suffix: string, schemaPath: string): Promise<string> {
  const base = process.env.MAILROOM_TEST_PG as string;
  const name = `mailroom_test_${process.env.MAILROOM_TEST_RUN}_${suffix}`;
  const admin = new pg.Client({ connectionString: withDatabase(base, "postgres") });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = withDatabase(base, name);
  await run(url, prismaDiffScript(["--from-empty"], ["--to-schema-datamodel", withUrl(schemaPath)]));
  return url;
}

async function run(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A copy of schema.prisma with one more column, as a developer would change it. */
function drifted(): string {
  const text = readFileSync(join(root, "prisma/schema.prisma"), "utf8");
  const changed = text.replace(/(model Thread \{\n)/, "$1  driftProbe Int?\n");
  expect(changed).not.toBe(text);
  const path = join(mkdtempSync(join(tmpdir(), "mailroom-drift-")), "schema.prisma");
  writeFileSync(path, changed);
  return path;
}

describe("migrations vs schema.prisma", () => {
  let env: TestEnv;
  let fromSchemaUrl: string;

  beforeAll(async () => {
    env = await createTestEnv(); // a clone of the database the migration runner built
    fromSchemaUrl = await databaseFromSchema("fromschema", join(root, "prisma/schema.prisma"));
  }, 120_000);

  afterAll(async () => {
    await env?.cleanup();
  });

  it("has no drift: same columns, indexes and constraints", async () => {
    const [migrated, described] = await Promise.all([catalog(env.databaseUrl), catalog(fromSchemaUrl)]);
    expect(migrated.columns.length).toBeGreaterThan(50);
    expect(migrated.columns).toEqual(described.columns);
    expect(migrated.indexes).toEqual(described.indexes);
    expect(migrated.constraints).toEqual(described.constraints);
  });

  it("records every migration in _prisma_migrations as Prisma does", async () => {
    const c = new pg.Client({ connectionString: env.databaseUrl });
    await c.connect();
    const r = await c.query(
      `SELECT migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations"`,
    );
    await c.end();
    expect(r.rows.length).toBeGreaterThan(0);
    for (const row of r.rows) {
      expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
      expect(row.finished_at).not.toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }
  });

  it("catches drift: a column the migrations lack is reported", async () => {
    const changed = await databaseFromSchema("drifted", drifted());
    const [migrated, described] = await Promise.all([catalog(env.databaseUrl), catalog(changed)]);
    expect(described.columns).not.toEqual(migrated.columns);
    expect(described.columns.filter((c) => !migrated.columns.includes(c)).join()).toContain('"driftProbe"');
  }, 120_000);

  it("db:diff's SQL (migrated database -> schema) closes the drift and is empty without one", async () => {
    const probe = await createTestEnv(); // its own migrated database: the migration is applied to it
    try {
      expect(migrationSql(probe.databaseUrl).trim()).toBe("");
      const schema = drifted();
      const sql: string = migrationSql(probe.databaseUrl, schema);
      expect(sql).toContain('ADD COLUMN     "driftProbe" INTEGER');
      await run(probe.databaseUrl, sql);
      const [migrated, described] = await Promise.all([
        catalog(probe.databaseUrl),
        catalog(await databaseFromSchema("drifted2", schema)),
      ]);
      expect(migrated).toEqual(described);
    } finally {
      await probe.cleanup();
    }
  }, 180_000);
});
