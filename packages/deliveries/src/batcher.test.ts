import { describe, expect, it } from "@jest/globals";
import { createBatcher } from "./batcher.ts";

/** A run the test finishes by hand: each call's items, and a way to answer or fail it. */
function manualRun() {
  const runs: { items: string[]; done: (out: string[] | Error) => void }[] = [];
  const run = (items: string[]) =>
    new Promise<string[]>((resolve, reject) => {
      runs.push({ items, done: (out) => (out instanceof Error ? reject(out) : resolve(out)) });
    });
  return { runs, run };
}
const flush = () => new Promise((r) => setImmediate(r));

describe("createBatcher", () => {
  it("sends a lone call at once, and the calls made meanwhile together in the next run", async () => {
    const { runs, run } = manualRun();
    const call = createBatcher(run, { max: 10 });
    const a = call("a");
    expect(runs.map((r) => r.items)).toEqual([["a"]]);
    const rest = [call("b"), call("c"), call("d")];
    expect(runs).toHaveLength(1); // nothing more goes out while "a" is in flight
    runs[0]?.done(["A"]);
    expect(await a).toBe("A");
    await flush();
    expect(runs.map((r) => r.items)).toEqual([["a"], ["b", "c", "d"]]);
    runs[1]?.done(["B", "C", "D"]);
    expect(await Promise.all(rest)).toEqual(["B", "C", "D"]);
  });

  it("keeps two calls of one key apart and caps a run at max", async () => {
    const { runs, run } = manualRun();
    const call = createBatcher(run, { max: 2, key: (s: string) => s.slice(0, 1) });
    const first = call("x0");
    const later = [call("a1"), call("a2"), call("b1"), call("c1")];
    runs[0]?.done(["X0"]);
    await first;
    await flush();
    expect(runs[1]?.items).toEqual(["a1", "b1"]); // a2 shares a1's key; max 2
    runs[1]?.done(["A1", "B1"]);
    await flush();
    expect(runs[2]?.items).toEqual(["a2", "c1"]);
    runs[2]?.done(["A2", "C1"]);
    expect(await Promise.all(later)).toEqual(["A1", "A2", "B1", "C1"]);
  });

  it("when a run of several fails, runs each item alone so only the one refused fails", async () => {
    const { runs, run } = manualRun();
    const call = createBatcher(run, { max: 10 });
    const first = call("ok0");
    const rest = [call("ok1"), call("bad"), call("ok2")].map((p) => p.catch((e: Error) => `error: ${e.message}`));
    runs[0]?.done(["OK0"]);
    await first;
    await flush();
    runs[1]?.done(new Error("refused"));
    await flush();
    expect(runs.slice(2).map((r) => r.items)).toEqual([["ok1"], ["bad"], ["ok2"]]);
    runs[2]?.done(["OK1"]);
    runs[3]?.done(new Error("NUL in text"));
    runs[4]?.done(["OK2"]);
    expect(await Promise.all(rest)).toEqual(["OK1", "error: NUL in text", "OK2"]);
  });

  it("allows `concurrency` runs in flight", async () => {
    const { runs, run } = manualRun();
    const call = createBatcher(run, { max: 10, concurrency: 2 });
    const all = [call("a"), call("b"), call("c"), call("d")];
    expect(runs.map((r) => r.items)).toEqual([["a"], ["b"]]);
    runs[1]?.done(["B"]);
    await flush();
    expect(runs[2]?.items).toEqual(["c", "d"]);
    runs[0]?.done(["A"]);
    runs[2]?.done(["C", "D"]);
    expect(await Promise.all(all)).toEqual(["A", "B", "C", "D"]);
  });
});
