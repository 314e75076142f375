// The Prisma 6 CLI with its JavaScript engine: the one Prisma CLI that can diff schemas offline.
// Used to write migrations (scripts/migration-diff.mjs) and by the drift test.
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

export function prismaDiffScript(from, to) {
  const cli = join(root, "tools/prisma-cli");
  const env = {
    ...process.env,
    DATABASE_URL: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
    PRISMA_QUERY_ENGINE_LIBRARY: process.execPath,
    PRISMA_SCHEMA_ENGINE_BINARY: process.execPath,
    PRISMA_ENGINES_CHECKSUM_IGNORE_MISSING: "1",
    PRISMA_HIDE_UPDATE_MESSAGE: "1",
    CHECKPOINT_DISABLE: "1",
  };
  const r = spawnSync(
    process.execPath,
    [join(cli, "node_modules/prisma/build/index.js"), "migrate", "diff", ...from, ...to, "--script"],
    {
      cwd: cli,
      env,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  if (r.status !== 0) {
    process.stderr.write(r.stderr);
    throw new Error(`prisma migrate diff failed (${r.status})`);
  }
  return r.stdout;
}
