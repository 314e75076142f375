// Issue 16 item 5: a service that cannot do its job at start says why in one line and exits
// non-zero — a port it cannot bind, Postgres or Redis unreachable past STARTUP_TIMEOUT_MS, an invalid
// setting — and never logs "listening" before it listens. Each case spawns the real service process
// (node --import tsx services/<name>/src/main.ts), configured by environment as deployed.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { HEALTH_PORT_SETTINGS, type HealthService } from "@mailroom/config";
import { createTestEnv, sparePort, type TestEnv, waitFor } from "@mailroom/testing";
import { repoServices } from "./services.ts";

const root = resolve(import.meta.dirname, "..");
const everyService = repoServices();
const redisServices = everyService.filter((s) => s !== "domain-verifier");

type Line = { level?: number; msg?: string; raw: string };
type Exit = { code: number | null; lines: Line[] };

/** A process of this checkout run through tsx, its stdout and stderr collected together. */
function spawnCollecting(args: string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ["--import", "tsx", ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const collect = (d: Buffer) => {
    out += d.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  return { child, output: () => out };
}

/** Runs a service until it exits by itself; every line it printed (stdout and stderr). */
function runToExit(service: string, env: Record<string, string>): Promise<Exit> {
  const { child, output } = spawnCollecting([`services/${service}/src/main.ts`], {
    HEALTH_PORT: "0",
    LOG_LEVEL: "info",
    SMTP_RELAY_URL: "smtp://127.0.0.1:2",
    STARTUP_TIMEOUT_MS: "1500",
    ...env,
  });
  return new Promise((done) =>
    child.once("close", (code) => {
      const lines = output()
        .split("\n")
        .filter((l) => l.trim())
        .map((raw): Line => {
          try {
            return { ...(JSON.parse(raw) as { level?: number; msg?: string }), raw };
          } catch {
            return { raw };
          }
        });
      done({ code, lines });
    }),
  );
}

/** The one fatal line a failed start must end with; fails the test with everything printed otherwise. */
function fatalLine(exit: Exit): string {
  const fatal = exit.lines.filter((l) => l.level === 60);
  expect({ code: exit.code, fatal: fatal.length, last: exit.lines.at(-1)?.level }).toEqual({
    code: 1,
    fatal: 1,
    last: 60,
  });
  // One clear line: the reason, not a stack trace, and nothing printed outside the JSON log.
  expect(exit.lines.filter((l) => l.level === undefined)).toEqual([]);
  expect(fatal[0]?.raw).not.toMatch(/"stack"/);
  return fatal[0]?.msg ?? "";
}

let env: TestEnv;
let closedPort: number;
const deps = () => ({ DATABASE_URL: env.databaseUrl, REDIS_URL: env.redisUrl, REDIS_PREFIX: env.redisPrefix });

beforeAll(async () => {
  env = await createTestEnv();
  // Nothing listens here: connections are refused at once, as from a database that is down.
  closedPort = await sparePort();
});
afterAll(async () => {
  await env.cleanup();
});

describe("an invalid setting", () => {
  test("every service exits 1 with one line naming the variable", async () => {
    const exits = await Promise.all(
      everyService.map((s) => runToExit(s, { ...deps(), STARTUP_TIMEOUT_MS: "soon", LOG_LEVEL: "info" })),
    );
    for (const exit of exits) {
      expect(fatalLine(exit)).toMatch(/^invalid environment: STARTUP_TIMEOUT_MS: /);
      expect(exit.lines).toHaveLength(1);
    }
  }, 300_000);
});

describe("the development CURSOR_SECRET", () => {
  test("the API refuses it with NODE_ENV=production, naming the variable; a set one starts", async () => {
    const refused = await runToExit("api", { ...deps(), NODE_ENV: "production", API_PORT: "0" });
    expect(fatalLine(refused)).toMatch(
      /^invalid environment: CURSOR_SECRET: the development default .* refused with NODE_ENV=production/,
    );
    expect(refused.lines).toHaveLength(1);
    // With a value of its own it gets past the environment check (and fails later on the closed
    // database port, which proves it started with that environment).
    const down = `postgresql://postgres@127.0.0.1:${closedPort}/mailroom`;
    const own = await runToExit("api", {
      ...deps(),
      DATABASE_URL: down,
      NODE_ENV: "production",
      API_PORT: "0",
      CURSOR_SECRET: "a-long-random-production-value",
    });
    expect(fatalLine(own)).not.toMatch(/invalid environment/);
  }, 120_000);
});

describe("Postgres unreachable for longer than STARTUP_TIMEOUT_MS", () => {
  test("every service exits 1 with one line naming the database and the error", async () => {
    const down = `postgresql://postgres@127.0.0.1:${closedPort}/mailroom`;
    const exits = await Promise.all(everyService.map((s) => runToExit(s, { ...deps(), DATABASE_URL: down })));
    for (const exit of exits) {
      // (On a very loaded machine the healthy dependency may be named as well, after this one.)
      const line = fatalLine(exit);
      expect(line).toContain(
        `database at 127.0.0.1:${closedPort} unreachable: connect ECONNREFUSED 127.0.0.1:${closedPort}`,
      );
      expect(line).toMatch(/ \(STARTUP_TIMEOUT_MS=1500\)$/);
      expect(exit.lines).toHaveLength(1);
      expect(exit.lines.some((l) => /listening|consuming|checking/.test(l.msg ?? ""))).toBe(false);
    }
  }, 300_000);
});

describe("Redis unreachable for longer than STARTUP_TIMEOUT_MS", () => {
  test("every service using Redis exits 1 with one fatal line naming Redis and the error", async () => {
    const down = `redis://127.0.0.1:${closedPort}`;
    const exits = await Promise.all(redisServices.map((s) => runToExit(s, { ...deps(), REDIS_URL: down })));
    for (const exit of exits) {
      // (On a very loaded machine the healthy dependency may be named as well, after this one.)
      const line = fatalLine(exit);
      expect(line).toContain(
        `Redis at 127.0.0.1:${closedPort} unreachable: connect ECONNREFUSED 127.0.0.1:${closedPort}`,
      );
      expect(line).toMatch(/ \(STARTUP_TIMEOUT_MS=1500\)$/);
      // Before it, only the service's own connection warnings (never a raw ioredis stack trace).
      expect(exit.lines.slice(0, -1).every((l) => l.level === 40)).toBe(true);
      expect(exit.lines.some((l) => /listening|consuming/.test(l.msg ?? ""))).toBe(false);
    }
  }, 300_000);
});

describe("a port that cannot be bound", () => {
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((r) => taken.close(r));
  });

  test.each([
    ["api", { API_HOST: "127.0.0.1", API_PORT: "" }],
    ["smtp-ingest", { SMTP_HOST: "127.0.0.1", SMTP_PORT: "" }],
  ])(
    "%s exits 1 with one line, having never said it listens",
    async (service, listenEnv) => {
      const portVar = Object.keys(listenEnv).find((k) => k.endsWith("_PORT")) ?? "";
      const exit = await runToExit(service, {
        ...deps(),
        STARTUP_TIMEOUT_MS: "60000",
        ...listenEnv,
        [portVar]: String(port),
      });
      expect(fatalLine(exit)).toBe(
        `cannot listen on 127.0.0.1:${port} (${portVar}): the port is already in use (EADDRINUSE)`,
      );
      expect(exit.lines.some((l) => /listening/.test(l.msg ?? ""))).toBe(false);
    },
    120_000,
  );

  test("a busy health port: every service exits 1 with one line naming its own setting, or HEALTH_PORT", async () => {
    const exits = await Promise.all(
      everyService.map((s) =>
        runToExit(s, { ...deps(), HEALTH_HOST: "127.0.0.1", [HEALTH_PORT_SETTINGS[s as HealthService]]: String(port) }),
      ),
    );
    exits.forEach((exit, i) => {
      const setting = HEALTH_PORT_SETTINGS[everyService[i] as HealthService];
      expect(fatalLine(exit)).toBe(
        `cannot listen on 127.0.0.1:${port} (${setting}): the port is already in use (EADDRINUSE)`,
      );
      expect(exit.lines).toHaveLength(1);
    });
    const shared = await runToExit("rule-engine", { ...deps(), HEALTH_HOST: "127.0.0.1", HEALTH_PORT: String(port) });
    expect(fatalLine(shared)).toBe(
      `cannot listen on 127.0.0.1:${port} (HEALTH_PORT): the port is already in use (EADDRINUSE)`,
    );
  }, 300_000);
});

describe("npm start (start-all): one environment for six services", () => {
  test("HEALTH_PORT and a service's own HEALTH_PORT_<SERVICE> set together: all six start, each on its port", async () => {
    const apiHealth = await sparePort();
    const { child, output } = spawnCollecting(["scripts/start-all.ts"], {
      ...deps(),
      LOG_LEVEL: "info",
      API_PORT: "0",
      SMTP_PORT: "0",
      SMTP_RELAY_URL: "smtp://127.0.0.1:2",
      // A base of 0: every service on an ephemeral port, except the API's, set by its own name.
      HEALTH_PORT: "0",
      HEALTH_PORT_API: String(apiHealth),
      HEALTH_HOST: "127.0.0.1",
    });
    try {
      await waitFor(
        async () => {
          if (child.exitCode !== null) throw new Error(`start-all exited ${child.exitCode}:\n${output()}`);
          return (output().match(/listening on|consuming queue|checking pending/g) ?? []).length >= 6;
        },
        { what: "six services started", timeoutMs: 180_000, intervalMs: 250 },
      );
      const health = await waitFor(
        async () =>
          fetch(`http://127.0.0.1:${apiHealth}/healthz`).then(
            (r) => r.status === 200,
            () => false,
          ),
        { what: "the API's health port" },
      );
      expect(health).toBe(true);
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r)));
    }
  }, 240_000);
});
