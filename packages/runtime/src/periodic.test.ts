import { describe, expect, it } from "@jest/globals";
import { startPeriodic } from "./periodic.ts";

describe("startPeriodic", () => {
  it("runs on its schedule without an onResult (the domain verifier passes none)", async () => {
    let runs = 0;
    let reached: () => void = () => undefined;
    const threeRuns = new Promise<void>((resolve) => {
      reached = resolve;
    });
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
    let done: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
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
});
