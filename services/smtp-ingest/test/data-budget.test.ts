import { describe, expect, it } from "@jest/globals";
import { DataBudget } from "../src/data-budget.ts";

/** The accounting behind the DATA memory budget (the streaming itself: streaming.test.ts). */
describe("DataBudget", () => {
  it("counts held bytes and their peak", () => {
    const b = new DataBudget(100);
    b.take(60);
    b.take(30);
    b.release(50);
    expect(b.heldBytes).toBe(40);
    expect(b.peakBytes).toBe(90);
    expect(b.exhausted).toBe(false);
  });

  it("makes a reader wait while it is used up, asks every holder to write, and wakes readers on room", async () => {
    const b = new DataBudget(100);
    const flushed: string[] = [];
    // A quiet connection holding bytes: its flush writes them out; here they are released at once.
    const unhold = b.hold(() => {
      flushed.push("quiet");
      b.release(70);
    });
    b.take(70);
    b.take(40); // another connection's read passes the limit
    expect(b.exhausted).toBe(true);
    let woken = false;
    const waiting = b.room().then(() => {
      woken = true;
    });
    expect(flushed).toEqual(["quiet"]); // the quiet holder was asked to write
    await waiting;
    expect(woken).toBe(true);
    expect(b.waits).toBe(1);
    unhold();
    b.take(70);
    const again = b.room(); // no holder left: waits for a release
    let done = false;
    void again.then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(false);
    b.release(110);
    await again;
    expect(b.heldBytes).toBe(0);
  });
});
