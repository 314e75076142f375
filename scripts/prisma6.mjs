// The Prisma 6 CLI with its JavaScript engine: the one Prisma CLI that can diff schemas offline.
// Used to write migrations (scripts/migration-diff.mjs) and by the drift test. prisma/schema.prisma
// is the one schema file: a migration is the difference between a database built from the
// migrations (introspected with `db pull`) and that file.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("..", import.meta.url));

/** Prisma 6 insists on a datasource url; Prisma 7 forbids one. Give the v6 CLI a copy with it. */
export function withUrl(schemaPath) {
  const text = readFileSync(schemaPath, "utf8").replace(
    /provider\s*=\s*"postgresql"/,
    'provider = "postgresql"\n  url = env("DATABASE_URL")',
  );
  const out = join(mkdtempSync(join(tmpdir(), "mailroom-schema-")), "schema.prisma");
  writeFileSync(out, text);
  return out;
}

/**
 * Objects Prisma's schema language cannot express, written by hand into a migration (a GIN
 * full-text index, a trigram index). Prisma's diff never writes or drops them; list them here.
 */
export const HAND_WRITTEN_INDEXES = new Set(["emails_search_idx", "emails_from_trgm_idx"]);

/** The SQL that takes the database at `databaseUrl` to `schemaPath` (default prisma/schema.prisma). */
export function migrationSql(databaseUrl, schemaPath = join(root, "prisma/schema.prisma")) {
  const pulled = join(mkdtempSync(join(tmpdir(), "mailroom-pulled-")), "schema.prisma");
  writeFileSync(pulled, pullDatamodel(databaseUrl));
  const sql = prismaDiffScript(["--from-schema-datamodel", pulled], ["--to-schema-datamodel", withUrl(schemaPath)]);
  return withoutHandWritten(sql);
}

/** The datamodel of a live database (`prisma db pull --print`), the CLI's notices left out. */
export function pullDatamodel(databaseUrl) {
  const out = prisma6(["db", "pull", "--print", "--schema", withUrl(join(root, "prisma/schema.prisma"))], databaseUrl);
  const start = out.search(/^(generator|datasource|model|enum) /m);
  if (start < 0) throw new Error("prisma db pull printed no datamodel");
  return out.slice(start);
}

/** Prisma's script is blocks headed `-- Kind`; those touching a hand-written index are dropped. */
function withoutHandWritten(sql) {
  const blocks = sql.split(/^(?=-- )/m);
  const kept = blocks.filter((b) => ![...HAND_WRITTEN_INDEXES].some((name) => b.includes(`"${name}"`)));
  return kept.join("");
}

export function prismaDiffScript(from, to) {
  return prisma6(["migrate", "diff", ...from, ...to, "--script"]);
}

function prisma6(args, databaseUrl = process.env.DATABASE_URL) {
  const cli = join(root, "tools/prisma-cli");
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl ?? "postgresql://postgres@127.0.0.1:5432/postgres",
    PRISMA_QUERY_ENGINE_LIBRARY: process.execPath,
    PRISMA_SCHEMA_ENGINE_BINARY: process.execPath,
    PRISMA_ENGINES_CHECKSUM_IGNORE_MISSING: "1",
    PRISMA_HIDE_UPDATE_MESSAGE: "1",
    CHECKPOINT_DISABLE: "1",
  };
  const r = spawnSync(process.execPath, [join(cli, "node_modules/prisma/build/index.js"), ...args], {
    cwd: cli,
    env,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) {
    process.stderr.write(r.stderr);
    throw new Error(`prisma ${args.slice(0, 2).join(" ")} failed (${r.status})`);
  }
  return r.stdout;
}
