import { type ChildProcess, spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { sparePort, type TestEnv, waitFor } from "@mailroom/testing";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** An API replica as an operator runs it: its own process (main.ts), its own Redis subscription. */
export type ApiProcess = { url: string; port: number; stop(): Promise<void> };

export async function startApiProcess(env: TestEnv, port?: number): Promise<ApiProcess> {
  const p = port ?? (await sparePort());
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "services/api/src/main.ts"], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? "",
      HEALTH_PORT: "0",
      DATABASE_URL: env.databaseUrl,
      REDIS_URL: env.redisUrl,
      REDIS_PREFIX: env.redisPrefix,
      API_PORT: String(p),
      API_HOST: "127.0.0.1",
      CURSOR_SECRET: "test-cursor-secret",
      RATE_LIMIT_REQUESTS: "100000",
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn",
      SHUTDOWN_TIMEOUT_MS: "10000",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const exited = new Promise<void>((resolveExit) => child.once("exit", () => resolveExit()));
  const url = `http://127.0.0.1:${p}`;
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`api process exited with ${child.exitCode}`);
      return fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
    },
    { what: `the API process on ${url}`, timeoutMs: 60_000, intervalMs: 100 },
  );
  return {
    url,
    port: p,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

// The SSE reader moved to @mailroom/testing (the API's tests use it too).
export { openSse, openSseWith, type SseEvent, type SseReader } from "@mailroom/testing";
