import { describe, expect, it } from "@jest/globals";
import { startPeriodic } from "./periodic.ts";

/** A promise and the function that resolves it. */
function signal(): [Promise<void>, () => void] {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return [promise, resolve];
}

describe("startPeriodic", () => {
  it("runs on its schedule without an onResult (the domain verifier passes none)", async () => {
    let runs = 0;
    const [threeRuns, reached] = signal();
    const periodic = startPeriodic({
      run: async () => {
        runs++;
        if (runs === 3) reached();
      },
      intervalMs: 1,
      onError: (err) => {
        throw err;
      },
    });
    await threeRuns;
    await periodic.close();
    expect(runs).toBeGreaterThanOrEqual(3);
  });

  it("hands each result to onResult and each failure to onError, and goes on", async () => {
    const seen: string[] = [];
    let n = 0;
    const [finished, done] = signal();
    const periodic = startPeriodic({
      run: async () => {
        n++;
        if (n === 2) throw new Error("second run failed");
        return n;
      },
      intervalMs: 1,
      onResult: (r) => {
        seen.push(`result ${r}`);
        if (r === 3) done();
      },
      onError: (err) => seen.push(`error ${(err as Error).message}`),
    });
    await finished;
    await periodic.close();
    expect(seen.slice(0, 3)).toEqual(["result 1", "error second run failed", "result 3"]);
  });

  it("never overlaps runs: runOnce during a run joins it, and close() waits for it", async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const [gate, release] = signal();
    const [firstStarted, started] = signal();
    const periodic = startPeriodic({
      run: async () => {
        runs++;
        active++;
        maxActive = Math.max(maxActive, active);
        started();
        await gate;
        active--;
        return runs;
      },
      intervalMs: 1,
      onError: (err) => {
        throw err;
      },
    });
    await firstStarted;
    const joined = periodic.runOnce();
    let closed = false;
    const closing = periodic.close().then(() => {
      closed = true;
    });
    // close() has not returned while the run is held at the gate.
    await Promise.resolve();
    expect(closed).toBe(false);
    release();
    expect(await joined).toBe(1);
    await closing;
    expect({ runs, maxActive, active }).toEqual({ runs: 1, maxActive: 1, active: 0 });
  });

  it("with runAtStart false makes no run before intervalMs", async () => {
    let runs = 0;
    const periodic = startPeriodic({
      run: async () => {
        runs++;
      },
      intervalMs: 3_600_000,
      runAtStart: false,
      onError: (err) => {
        throw err;
      },
    });
    // A run at start would be due at the next timer phase: let one pass.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(runs).toBe(0);
    await periodic.runOnce();
    expect(runs).toBe(1);
    await periodic.close();
  });
});
