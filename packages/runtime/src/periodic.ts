/**
 * Scheduled work in a process: run at start (unless `runAtStart: false`, then first after
 * `intervalMs`), then `intervalMs` after each run ends (runs never overlap, and a slow run delays the
 * next instead of piling up). A run that throws is reported and the schedule goes on. close() stops
 * the schedule and waits for a run in progress and its onResult/onError; the run can watch `stopped`
 * to end early at a safe point. runOnce() (a test, an operator) joins the run in progress if there is
 * one. The timer is unref()ed: a schedule alone never keeps a process alive (its servers and workers do).
 */
export type Periodic<T> = { runOnce(): Promise<T>; close(): Promise<void> };

export function startPeriodic<T>(opts: {
  run: (stopped: () => boolean) => Promise<T>;
  intervalMs: number;
  /** Default true. false: the first run comes `intervalMs` after start. */
  runAtStart?: boolean;
  onResult?: (result: T) => void;
  onError: (err: unknown) => void;
}): Periodic<T> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<T> | null = null;
  // The scheduled cycle in progress (run + its report), so close() also waits for onResult/onError.
  let cycle: Promise<void> | null = null;

  const runOnce = (): Promise<T> => {
    current ??= opts
      .run(() => stopped)
      .finally(() => {
        current = null;
      });
    return current;
  };
  const report = async () => {
    try {
      // Not `onResult?.(await runOnce())`: without onResult the optional call skips its argument,
      // and the run would never happen (the domain verifier passes none).
      const result = await runOnce();
      opts.onResult?.(result);
    } catch (err) {
      opts.onError(err);
    }
  };
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      cycle = report().finally(() => {
        cycle = null;
        if (!stopped) schedule(opts.intervalMs);
      });
    }, ms);
    timer.unref();
  };
  schedule(opts.runAtStart === false ? opts.intervalMs : 0);

  return {
    runOnce,
    async close() {
      stopped = true;
      clearTimeout(timer);
      await cycle?.catch(() => undefined);
      await current?.catch(() => undefined);
    },
  };
}
