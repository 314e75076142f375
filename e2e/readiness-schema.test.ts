// Ready means ready: every service, started as its own process against a database the migrations
// have not reached (none of them, then all but the newest), answers /readyz 503 naming the missing
// migrations, and turns ready once the migrate CLI has run, without a restart. The init container of
// the Kubernetes manifests (wait-schema-cli) waits through the same and exits 0 at the end.

import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { expectedMigrations, migrate, migrationsDir } from "@mailroom/db";
import { createEmptyDatabase, createTestEnv, sparePort, type TestEnv, waitFor } from "@mailroom/testing";
import { type ServiceProcess, startService, stopService } from "./service-processes.ts";
import { repoRoot, repoServices } from "./services.ts";

type Readiness = { status: number; body: { ok?: boolean; started?: boolean; checks?: Record<string, string> } };

const readiness = async (url: string): Promise<Readiness> => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness["body"] };
};

describe("readiness and the schema", () => {
  const all = expectedMigrations();
  const procs: ServiceProcess[] = [];
  let env: TestEnv;
  let databaseUrl: string;
  let apiUrl: string;
  let older: string;
  let initContainer: ChildProcess;
  let initOutput = "";

  beforeAll(async () => {
    env = await createTestEnv(); // for the Redis prefix; the services get an empty database
    databaseUrl = await createEmptyDatabase();
    older = mkdtempSync(join(tmpdir(), "mailroom-migrations-"));
    for (const name of all.slice(0, -1)) cpSync(join(migrationsDir, name), join(older, name), { recursive: true });
    const apiPort = await sparePort();
    apiUrl = `http://127.0.0.1:${apiPort}`;
    const shared = { DATABASE_URL: databaseUrl, REDIS_URL: env.redisUrl, REDIS_PREFIX: env.redisPrefix };
    const own: Record<string, Record<string, string>> = {
      api: { API_PORT: String(apiPort), API_HOST: "127.0.0.1" },
      "smtp-ingest": { SMTP_PORT: String(await sparePort()), SMTP_HOST: "127.0.0.1" },
      "outbound-sender": { SMTP_RELAY_URL: "smtp://127.0.0.1:2" },
    };
    for (const name of repoServices()) procs.push(await startService(name, { ...shared, ...own[name] }));
    initContainer = spawn(process.execPath, ["--import", "tsx", "packages/db/src/wait-schema-cli.ts"], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? "", DATABASE_URL: databaseUrl, SCHEMA_POLL_MS: "100" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    initContainer.stdout?.on("data", (d: Buffer) => {
      initOutput += d.toString();
    });
    initContainer.stderr?.on("data", (d: Buffer) => {
      initOutput += d.toString();
    });
  }, 120_000);

  afterAll(async () => {
    initContainer?.kill("SIGKILL");
    await Promise.all(procs.map(stopService));
    rmSync(older, { recursive: true, force: true });
    await env.cleanup();
  });

  /** Waits until every service has started and answers /readyz as `expected` says, naming what it checks. */
  const everyService = (what: string, expected: (r: Readiness) => boolean) =>
    Promise.all(
      procs.map((p) =>
        waitFor(
          async () => {
            if (p.child.exitCode !== null)
              throw new Error(`${p.name} exited ${p.child.exitCode}: ${p.stdout()}${p.stderr()}`);
            const r = await readiness(p.healthUrl).catch(() => null);
            return r?.body.started && expected(r) ? r : false;
          },
          { what: `${p.name}: ${what}`, timeoutMs: 120_000, intervalMs: 200 },
        ),
      ),
    );

  test("unmigrated: every service is started but not ready, and /readyz names the missing migrations", async () => {
    const unmigrated = new RegExp(`^${all.length} of ${all.length} migrations not applied: ${all[0]}, `);
    const answers = await everyService("503 naming the migrations", (r) =>
      unmigrated.test(r.body.checks?.schema ?? ""),
    );
    for (const r of answers) expect([r.status, r.body.ok]).toEqual([503, false]);
    // The init container is still waiting, and said why.
    await waitFor(async () => initOutput.includes("waiting for the schema"), { what: "wait-schema-cli's line" });
    expect(initContainer.exitCode).toBe(null);
    expect(initOutput).toContain(`waiting for the schema: ${all.length} of ${all.length} migrations not applied`);
    // The API's own port says the same (what an HTTP load balancer's health check sees).
    const own = await readiness(apiUrl);
    expect(own.status).toBe(503);
    expect(own.body.checks?.schema).toMatch(/migrations not applied/);
  }, 180_000);

  test("partly migrated (an older release's schema): /readyz names the one that is missing", async () => {
    await migrate(databaseUrl, older);
    const newest = all.at(-1) as string;
    const answers = await everyService(`503 naming only ${newest}`, (r) =>
      Boolean(r.body.checks?.schema?.startsWith(`1 of ${all.length} migrations not applied: ${newest} (`)),
    );
    for (const r of answers) expect(r.status).toBe(503);
  }, 180_000);

  test("once the migrations ran, every service turns ready without a restart", async () => {
    await migrate(databaseUrl, migrationsDir);
    const answers = await everyService("200", (r) => r.status === 200);
    for (const r of answers) expect(r.body.checks?.schema).toBe("ok");
    expect((await readiness(apiUrl)).status).toBe(200);
    const code = await new Promise<number | null>((r) =>
      initContainer.exitCode !== null ? r(initContainer.exitCode) : initContainer.once("exit", r),
    );
    expect([code, initOutput]).toEqual([
      0,
      expect.stringContaining(`schema ready: all ${all.length} migrations applied`),
    ]);
  }, 180_000);
});
