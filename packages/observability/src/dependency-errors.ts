import type { Logger } from "@mailroom/log";
import { Counter, type Registry } from "prom-client";

export type DependencyErrorLog = {
  /** One error talking to a dependency ("redis", "postgres"). Logged at once or folded into a count. */
  report(dependency: string, err: unknown, context?: Record<string, unknown>): void;
  /** The dependency answers again: logs what was folded, then one "reachable again" line. */
  recovered(dependency: string): void;
  /** Logs every pending count now (shutdown, tests) and stops the timers. */
  flush(): void;
};

export type DependencyErrorLogOptions = {
  /** At most one line per dependency per window while it keeps failing (default 30 s). */
  windowMs?: number;
  /** Counts every error in `mailroom_dependency_errors_total{dependency}`, folded or not. */
  registry?: Registry;
};

type State = { count: number; total: number; last: string; context: Record<string, unknown>; timer: NodeJS.Timeout };

/** One line: stack traces and multi-line driver messages would break the JSON-lines log. */
export const oneLine = (err: unknown): string =>
  (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, " ").slice(0, 500);

function errorCounter(registry: Registry): Counter<"dependency"> {
  const counter = new Counter({
    name: "mailroom_dependency_errors_total",
    help: "Errors talking to a dependency (Redis, Postgres), including those folded out of the log",
    labelNames: ["dependency"],
    registers: [registry],
  });
  // Series from the start, so rate() and alerts see a 0 before the first error.
  for (const dependency of ["redis", "postgres"]) counter.inc({ dependency }, 0);
  return counter;
}

/**
 * Rate-limits the errors of an unreachable dependency. A client that reconnects in a loop (ioredis,
 * BullMQ workers and queues, each on its own connection) reports the same outage many times a
 * second; the first error of an outage is logged at once, the rest are counted and logged as one
 * line per window with the count and the last message, and the recovery is logged once.
 */
export function createDependencyErrorLog(logger: Logger, opts: DependencyErrorLogOptions = {}): DependencyErrorLog {
  const windowMs = opts.windowMs ?? 30_000;
  const states = new Map<string, State>();
  const counter = opts.registry ? errorCounter(opts.registry) : null;

  const summarize = (dependency: string, s: State) => {
    if (s.count === 0) return false;
    logger.warn({ dependency, count: s.count, windowMs, err: s.last, ...s.context }, `${dependency} error repeated`);
    s.count = 0;
    return true;
  };
  const tick = (dependency: string) => {
    const s = states.get(dependency);
    if (!s) return;
    // A quiet window ends the outage as far as the log goes; the next error is logged at once.
    if (!summarize(dependency, s)) states.delete(dependency);
  };

  return {
    report(dependency, err, context = {}) {
      counter?.inc({ dependency });
      const message = oneLine(err);
      const s = states.get(dependency);
      if (s) {
        s.count++;
        s.total++;
        s.last = message;
        s.context = context;
        return;
      }
      // Constant messages (the details are fields): easy to search and to alert on.
      logger.warn({ dependency, err: message, ...context }, `${dependency} error`);
      const timer = setInterval(() => tick(dependency), windowMs);
      timer.unref();
      states.set(dependency, { count: 0, total: 1, last: message, context, timer });
    },
    recovered(dependency) {
      const s = states.get(dependency);
      if (!s) return;
      summarize(dependency, s);
      clearInterval(s.timer);
      states.delete(dependency);
      logger.info({ dependency, errors: s.total }, `${dependency} reachable again`);
    },
    flush() {
      for (const [dependency, s] of states) {
        summarize(dependency, s);
        clearInterval(s.timer);
      }
      states.clear();
    },
  };
}
