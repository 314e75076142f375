import type { Server } from "node:net";
import { setTimeout as delay } from "node:timers/promises";

/**
 * A reason the process cannot start. Its message is the whole story (what, where, why), so `fatal`
 * logs it as the one line the process dies with, without a stack trace.
 */
export class StartupError extends Error {
  override name = "StartupError";
}

/** Something the service needs before it may take work: Postgres, Redis. */
export type Dependency = {
  /** How the failure line names it, e.g. "database at db.internal:5432". */
  name: string;
  /** Resolves once the dependency answers; rejects (or never settles) while it does not. */
  ready: () => Promise<unknown>;
  /** Pause between failed checks (default 250 ms); 0 for an event-driven check that waits itself. */
  retryMs?: number;
};

const WAITING_LOG_EVERY_MS = 10_000;

/**
 * Waits until every dependency answers, retrying failed checks, for at most `timeoutMs` in all
 * (STARTUP_TIMEOUT_MS). Past that it throws a StartupError naming what is still unreachable and its
 * last error: an orchestrator restarts the process, and an operator sees why. `onWaiting` hears about
 * a long wait at most every 10 s, so a short wait says nothing and a failure is one line.
 */
export async function awaitDependencies(
  deps: Dependency[],
  timeoutMs: number,
  onWaiting?: (name: string, lastError: string) => void,
  retryMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const failures = await Promise.all(deps.map((dep) => waitForOne(dep, deadline, retryMs, onWaiting)));
  const down = failures.filter((f): f is string => f !== null);
  if (down.length) throw new StartupError(`${down.join("; ")} (STARTUP_TIMEOUT_MS=${timeoutMs})`);
}

/** null once `dep` answered; else the failure line for it, when the deadline passed first. */
async function waitForOne(
  dep: Dependency,
  deadline: number,
  retryMs: number,
  onWaiting?: (name: string, lastError: string) => void,
): Promise<string | null> {
  let lastError = "no answer";
  let nextWaitingLog = Date.now() + WAITING_LOG_EVERY_MS;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return `${dep.name} unreachable: ${lastError}`;
    try {
      // A check that hangs (a black-holed address) is cut at the deadline like one that fails.
      await withDeadline(dep.ready(), left);
      return null;
    } catch (err) {
      // A StartupError means it will not come back (a closed client): no point waiting longer.
      if (err instanceof StartupError) return `${dep.name} unreachable: ${err.message}`;
      if (!(err instanceof DeadlineError)) lastError = errorText(err);
    }
    if (onWaiting && Date.now() >= nextWaitingLog) {
      onWaiting(dep.name, lastError);
      nextWaitingLog = Date.now() + WAITING_LOG_EVERY_MS;
    }
    const pause = Math.min(dep.retryMs ?? retryMs, deadline - Date.now());
    if (pause > 0) await delay(pause);
  }
}

class DeadlineError extends Error {}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError()), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

function errorText(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length) return errorText(err.errors[0]);
  if (err instanceof Error) return err.message || (err as NodeJS.ErrnoException).code || err.name;
  return String(err);
}

/** "host:port" of a connection URL, never its credentials. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host || url;
  } catch {
    // A Redis Cluster URL lists several host:port seeds, which URL cannot parse.
    return /^[a-z+]+:\/\/(?:[^@/]*@)?([^/?#]+)/i.exec(url)?.[1] ?? "(unparseable URL)";
  }
}

/** Postgres answers a query. `query` is e.g. `() => pool.query("SELECT 1")`. */
export function postgresDependency(url: string, query: () => Promise<unknown>): Dependency {
  return { name: `database at ${hostOf(url)}`, ready: query };
}

/** The slice of an ioredis client the start-up wait uses. */
export type RedisLike = {
  status: string;
  once(event: "ready", listener: () => void): unknown;
  once(event: "error", listener: (err: Error) => void): unknown;
  off(event: "ready", listener: () => void): unknown;
  off(event: "error", listener: (err: Error) => void): unknown;
};

/**
 * Redis is ready for commands on every given client (a worker's own BullMQ connection too, so none
 * of them meets a connection error without a listener while the service waits). Waits on the
 * clients' own reconnect loops: resolves once all are ready, rejects with the next connection error
 * (so the failure line says ECONNREFUSED, not a timeout).
 */
export function redisDependency(url: string, ...clients: RedisLike[]): Dependency {
  return {
    name: `Redis at ${hostOf(url)}`,
    // Re-armed at once: between two checks no error may reach a client without an error listener.
    retryMs: 0,
    ready: () => {
      const cleanups: (() => void)[] = [];
      const cleanup = () => {
        for (const undo of cleanups.splice(0)) undo();
      };
      const one = (redis: RedisLike) =>
        new Promise<void>((resolve, reject) => {
          if (redis.status === "ready") return resolve();
          if (redis.status === "end") return reject(new StartupError("the client was closed"));
          const onReady = () => {
            redis.off("error", onError);
            resolve();
          };
          const onError = (err: Error) => {
            redis.off("ready", onReady);
            reject(err);
          };
          redis.once("ready", onReady);
          redis.once("error", onError);
          cleanups.push(() => {
            redis.off("ready", onReady);
            redis.off("error", onError);
          });
        });
      return Promise.all(clients.map(one)).finally(cleanup);
    },
  };
}

const bindReasons: Record<string, string> = {
  EADDRINUSE: "the port is already in use",
  EACCES: "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)",
  EADDRNOTAVAIL: "the address is not on this host",
};

/**
 * Binds `server` and resolves once it is listening — the only moment a service may say so. A port
 * that cannot be bound rejects with a StartupError naming the address, the setting it came from
 * (`API_PORT`, `HEALTH_PORT_RULE_ENGINE`…) and the reason.
 */
export function listen(server: Server, port: number, host: string, setting?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off("listening", onListening);
      const reason = (err.code && bindReasons[err.code]) ?? err.message;
      const where = `${host}:${port}${setting ? ` (${setting})` : ""}`;
      reject(new StartupError(`cannot listen on ${where}: ${reason}${err.code ? ` (${err.code})` : ""}`));
    };
    const onListening = () => {
      server.off("error", onError);
      resolve();
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(port, host);
  });
}
