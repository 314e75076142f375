/**
 * Scheduled work in a process: run now, then `intervalMs` after each run ends (runs never overlap,
 * and a slow run delays the next instead of piling up). A run that throws is reported and the
 * schedule goes on. close() stops the schedule and waits for a run in progress; the run can watch
 * `stopped` to end early at a safe point.
 */
export type Periodic<T> = { runOnce(): Promise<T>; close(): Promise<void> };

export function startPeriodic<T>(opts: {
  run: (stopped: () => boolean) => Promise<T>;
  intervalMs: number;
  onResult?: (result: T) => void;
  onError: (err: unknown) => void;
}): Periodic<T> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<T> | null = null;

  const runOnce = (): Promise<T> => {
    current ??= opts
      .run(() => stopped)
      .finally(() => {
        current = null;
      });
    return current;
  };
  const loop = async () => {
    try {
      // Not `onResult?.(await runOnce())`: without onResult the optional call skips its argument,
      // and the run would never happen (the domain verifier passes none).
      const result = await runOnce();
      opts.onResult?.(result);
    } catch (err) {
      opts.onError(err);
    }
    if (!stopped) timer = setTimeout(loop, opts.intervalMs);
  };
  timer = setTimeout(loop, 0);

  return {
    runOnce,
    async close() {
      stopped = true;
      clearTimeout(timer);
      await current?.catch(() => undefined);
    },
  };
}
