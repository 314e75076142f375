// Writes a new migration offline: the SQL that takes the schema of the latest migration
// (prisma/schema.snapshot.prisma) to prisma/schema.prisma, computed by the Prisma 6 CLI with its
// JavaScript engine (Prisma 7's migrate needs a native engine this network cannot download).
// Usage: npm run db:diff -- <name>        (also: --initial to diff from an empty database)
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { prismaDiffScript, root, withUrl } from "./prisma6.mjs";

const args = process.argv.slice(2);
const initial = args.includes("--initial");
const name = args.find((a) => !a.startsWith("--"));
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error("usage: npm run db:diff -- <snake_case_name> [--initial]");
  process.exit(2);
}
const sql = prismaDiffScript(
  initial ? ["--from-empty"] : ["--from-schema-datamodel", withUrl(join(root, "prisma/schema.snapshot.prisma"))],
  ["--to-schema-datamodel", withUrl(join(root, "prisma/schema.prisma"))],
);
if (sql.trim() === "" || sql.includes("-- This is an empty migration.")) {
  console.error("db:diff: schema.prisma has no changes since the last migration");
  process.exit(1);
}
const stamp = new Date()
  .toISOString()
  .replace(/[-:TZ.]/g, "")
  .slice(0, 14);
const dir = join(root, "prisma/migrations", `${stamp}_${name}`);
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, "migration.sql"), sql);
copyFileSync(join(root, "prisma/schema.prisma"), join(root, "prisma/schema.snapshot.prisma"));
console.log(`db:diff: wrote ${dir}/migration.sql`);
