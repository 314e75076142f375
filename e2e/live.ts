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

export type SseEvent = { id?: string; event?: string; data: string };

/**
 * A server-sent-event reader over fetch (undici, a real HTTP client): it parses the stream as the
 * EventSource algorithm does and records events and comments as they arrive.
 */
export type SseReader = {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: string[];
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
};

export async function openSse(url: string, key: string, lastEventId?: string): Promise<SseReader> {
  return openSseWith(url, {
    authorization: `Bearer ${key}`,
    ...(lastEventId ? { "last-event-id": lastEventId } : {}),
  });
}

/** The same reader with any credentials (a console session cookie, or none at all). */
export async function openSseWith(url: string, headers: Record<string, string>): Promise<SseReader> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const read = async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buf = "";
    let current: Partial<SseEvent> & { data?: string } = {};
    try {
      for await (const chunk of res.body) {
        buf += decoder.decode(chunk as Uint8Array, { stream: true });
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const line = buf.slice(0, nl).replace(/\r$/, "");
          buf = buf.slice(nl + 1);
          if (line === "") {
            if (current.data !== undefined) events.push(current as SseEvent);
            current = {};
          } else if (line.startsWith(":")) comments.push(line.slice(1).trim());
          else {
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "data") current.data = current.data === undefined ? value : `${current.data}\n${value}`;
            else if (field === "id") current.id = value;
            else if (field === "event") current.event = value;
          }
        }
      }
    } catch {
      /* aborted by close() */
    }
  };
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    ended: read(),
    close: () => abort.abort(),
  };
}
