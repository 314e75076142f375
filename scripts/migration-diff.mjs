// Writes a new migration offline: the SQL that takes a database built from prisma/migrations to
// prisma/schema.prisma (the one schema file). A scratch database is migrated by our own runner,
// introspected and diffed against the schema by the Prisma 6 CLI with its JavaScript engine
// (Prisma 7's migrate needs a native engine this network cannot download), then dropped.
// Usage: npm run db:diff -- <name>        (also: --initial to diff from an empty database)
// DATABASE_URL names the server (and its credentials); the scratch database is created beside it.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { migrationSql, prismaDiffScript, root, withUrl } from "./prisma6.mjs";

const args = process.argv.slice(2);
const initial = args.includes("--initial");
const name = args.find((a) => !a.startsWith("--"));
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error("usage: npm run db:diff -- <snake_case_name> [--initial]");
  process.exit(2);
}

// pg as packages/db declares it.
const pg = createRequire(join(root, "packages/db/package.json"))("pg");
const server = new URL(process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres");
const scratch = new URL(server);
scratch.pathname = `/mailroom_diff_${process.pid}`;

/** Our runner (packages/db/src/migrate.ts) creates the database and applies every migration. */
function migrateScratch() {
  const r = spawnSync(process.execPath, ["--import", "tsx", join(root, "packages/db/src/migrate-cli.ts")], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: scratch.href },
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`applying the migrations to a scratch database failed:\n${r.stderr}`);
}

async function dropScratch() {
  const admin = new URL(server);
  admin.pathname = "/postgres";
  const c = new pg.Client({ connectionString: admin.href });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS "${scratch.pathname.slice(1)}"`);
  } finally {
    await c.end();
  }
}

let sql;
if (initial) {
  sql = prismaDiffScript(["--from-empty"], ["--to-schema-datamodel", withUrl(join(root, "prisma/schema.prisma"))]);
} else {
  try {
    migrateScratch();
    sql = migrationSql(scratch.href);
  } finally {
    await dropScratch();
  }
}
if (sql.trim() === "" || sql.includes("-- This is an empty migration.")) {
  console.error("db:diff: schema.prisma has no changes the migrations do not already make");
  process.exit(1);
}
const stamp = new Date()
  .toISOString()
  .replace(/[-:TZ.]/g, "")
  .slice(0, 14);
const dir = join(root, "prisma/migrations", `${stamp}_${name}`);
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, "migration.sql"), sql);
console.log(`db:diff: wrote ${dir}/migration.sql`);
