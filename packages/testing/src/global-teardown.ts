import { connectClient } from "@mailroom/db";
import { withDatabase } from "./servers.ts";

/** Drops every database this run created (the template and each test file's clone). */
export default async function globalTeardown(): Promise<void> {
  const runId = process.env.MAILROOM_TEST_RUN;
  const base = process.env.MAILROOM_TEST_PG;
  if (!runId || !base) return;
  const client = await connectClient(withDatabase(base, "postgres"));
  try {
    const dbs = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [
      `mailroom_test_${runId}_%`,
    ]);
    for (const { datname } of dbs.rows) {
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}
