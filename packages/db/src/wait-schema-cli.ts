// Waits until DATABASE_URL has every migration this build bundles, then exits 0: the init container
// of the Kubernetes manifests (infra/k8s), where nothing orders the migration Job before the
// Deployments. Says what it waits for once, then every 30 s; an unreachable database is waited for
// the same way (the pod stays in Init, which `kubectl get pods` shows).
import { setTimeout as delay } from "node:timers/promises";
import { createPool } from "./pool.ts";
import { expectedMigrations, missingMigrations, missingMigrationsText } from "./schema-check.ts";

const databaseUrl = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/mailroom";
const pollMs = Number(process.env.SCHEMA_POLL_MS ?? 2_000);
const log = (level: number, msg: string) => console.log(JSON.stringify({ level, service: "wait-for-schema", msg }));

const expected = expectedMigrations();
// An idle connection that drops is reconnected by the next query (createPool listens for it).
const pool = createPool(databaseUrl, { max: 1 });
let lastSaid = "";
let saidAt = 0;
for (;;) {
  const state = await missingMigrations(pool, expected).then(
    (missing) => (missing.length ? missingMigrationsText(missing, expected) : null),
    (err: Error) => `database unreachable: ${err.message}`,
  );
  if (state === null) break;
  if (state !== lastSaid || Date.now() - saidAt >= 30_000) {
    log(30, `waiting for the schema: ${state}`);
    lastSaid = state;
    saidAt = Date.now();
  }
  await delay(pollMs);
}
await pool.end();
log(30, `schema ready: all ${expected.length} migrations applied`);
