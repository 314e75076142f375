// `npm run db:migrate`: applies pending migrations to DATABASE_URL (creating the database if needed).

import { migrate } from "./migrate.ts";
import { migrationsDir } from "./paths.ts";

const databaseUrl = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/mailroom";
const dir = migrationsDir;
try {
  const r = await migrate(databaseUrl, dir);
  console.log(
    JSON.stringify({ msg: "migrations applied", applied: r.applied, alreadyApplied: r.alreadyApplied.length }),
  );
} catch (err) {
  console.error(`db:migrate: ${(err as Error).message}`);
  process.exit(1);
}
