import { describe, expect, it } from "@jest/globals";
import { createByteBudget } from "../src/budget.ts";

/** Order of grants, observed without timing: each step awaits only promises that must settle. */
describe("byte budget", () => {
  it("admits what fits, queues the rest first come first served, and admits an oversize one alone", async () => {
    const b = createByteBudget(100);
    const order: string[] = [];
    const take = (name: string, bytes: number) =>
      b.acquire(bytes).then((release) => {
        order.push(name);
        return release;
      });
    const a = await take("a", 60);
    const c = await take("c", 40);
    expect(b.inFlight).toBe(100);
    const big = take("big", 500); // larger than the budget: waits until nothing is in flight
    const small = take("small", 1); // fits after a release, but must not overtake `big`
    await Promise.resolve();
    expect(order).toEqual(["a", "c"]);
    a();
    a(); // a second release is ignored
    expect(b.inFlight).toBe(40);
    c();
    const releaseBig = await big;
    expect(b.inFlight).toBe(500);
    releaseBig();
    (await small)();
    expect(order).toEqual(["a", "c", "big", "small"]);
    expect(b.inFlight).toBe(0);
  });
});
