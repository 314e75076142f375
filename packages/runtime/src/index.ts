import type { Logger } from "@mailroom/log";
import { StartupError } from "./startup.ts";

export { type Periodic, startPeriodic } from "./periodic.ts";

export {
  awaitDependencies,
  type Dependency,
  hostOf,
  listen,
  postgresDependency,
  type RedisLike,
  redisDependency,
  StartupError,
} from "./startup.ts";

/**
 * The part of SHUTDOWN_TIMEOUT_MS a service may spend finishing the work it holds (open SMTP
 * transactions, active jobs): the rest (a fifth, at most 5 s) is left for closing its queues,
 * Redis, Postgres and the health port before the force-exit timer fires.
 */
export function drainBudgetMs(shutdownTimeoutMs: number): number {
  return shutdownTimeoutMs - Math.min(5_000, Math.floor(shutdownTimeoutMs / 5));
}

export type ShutdownStep = { name: string; close: () => Promise<unknown> | unknown };

/**
 * One shutdown handler per process. Idempotent; runs the steps in the given order (stop intake →
 * workers → queues → Redis → Prisma), each failure logged and skipped, then exits. A force-exit
 * timer (unref'd, so it never holds the process open) ends a shutdown that hangs.
 */
export function installShutdown(logger: Logger, steps: ShutdownStep[], timeoutMs = 10_000): () => Promise<void> {
  let running: Promise<void> | null = null;
  const shutdown = (signal = "shutdown"): Promise<void> => {
    if (running) return running;
    logger.info({ signal }, "shutting down");
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, "shutdown timed out; forcing exit");
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    running = (async () => {
      await closeInOrder(logger, steps);
      clearTimeout(timer);
      logger.info("stopped");
    })();
    return running;
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM").then(() => process.exit(0)));
  process.once("SIGINT", () => void shutdown("SIGINT").then(() => process.exit(0)));
  return () => shutdown();
}

/**
 * Runs shutdown steps in order, each failure logged and skipped: what a signal runs through
 * installShutdown, and what a test calls to stop a service it started in-process.
 */
export async function closeInOrder(logger: Pick<Logger, "warn">, steps: ShutdownStep[]): Promise<void> {
  for (const step of steps) {
    try {
      await step.close();
    } catch (err) {
      logger.warn({ err, step: step.name }, "shutdown step failed");
    }
  }
}

/**
 * Logs a fatal start-up error as one clear line and exits non-zero. A StartupError or an invalid
 * setting (EnvError) already says what and why: no stack trace; anything else keeps its stack.
 */
export function fatal(logger: Logger, err: unknown): never {
  if (err instanceof Error && (err instanceof StartupError || err.name === "EnvError")) logger.fatal(err.message);
  else logger.fatal({ err }, err instanceof Error ? err.message : String(err));
  process.exit(1);
}
