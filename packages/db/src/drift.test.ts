import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createTestEnv, type TestEnv, withDatabase } from "@mailroom/testing";
import pg from "pg";
// @ts-expect-error: plain .mjs helper shared with scripts/migration-diff.mjs
import { prismaDiffScript, root, withUrl } from "../../../scripts/prisma6.mjs";

/**
 * Proves that prisma/migrations (as applied by our offline runner) produce exactly the database
 * that prisma/schema.prisma describes: build one database from the migrations, another from the
 * schema (Prisma's own `migrate diff --from-empty` SQL), and compare their catalogs.
 */

// Objects Prisma's schema language cannot express, written by hand into a migration (e.g. a GIN
// full-text index). They exist only on the migrations side; list them here by name.
const HAND_WRITTEN_INDEXES = new Set<string>(["emails_search_idx", "emails_from_trgm_idx"]);

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
      indexes: indexes.rows.filter((r) => !HAND_WRITTEN_INDEXES.has(r.indexname)).map((r) => r.indexdef),
      constraints: constraints.rows.map((r) => `${r.tbl} ${r.conname} ${r.def}`),
    };
  } finally {
    await c.end();
  }
}

describe("migrations vs schema.prisma", () => {
  let env: TestEnv;
  let fromSchemaUrl: string;

  beforeAll(async () => {
    env = await createTestEnv(); // a clone of the database the migration runner built
    const base = process.env.MAILROOM_TEST_PG as string;
    const name = `mailroom_test_${process.env.MAILROOM_TEST_RUN}_fromschema`;
    const admin = new pg.Client({ connectionString: withDatabase(base, "postgres") });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    fromSchemaUrl = withDatabase(base, name);
    const sql: string = prismaDiffScript(
      ["--from-empty"],
      ["--to-schema-datamodel", withUrl(join(root, "prisma/schema.prisma"))],
    );
    const c = new pg.Client({ connectionString: fromSchemaUrl });
    await c.connect();
    await c.query(sql);
    await c.end();
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
});
