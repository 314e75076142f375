import { createParking } from "./parking.ts";

/** A clock the test moves, and jitter fixed at 1× (random 0.5). */
function clocked() {
  let t = 1_000_000;
  const parking = createParking({ minMs: 1_000, maxMs: 30_000, now: () => t, random: () => 0.5 });
  return { parking, advance: (ms: number) => (t += ms) };
}

describe("parking a job for a busy endpoint", () => {
  it("without a recent pace: the minimum delay, as before", () => {
    const { parking } = clocked();
    expect(parking.park("d1", "ep")).toBe(1_000);
    expect(parking.park("d2", "ep")).toBe(1_000);
  });

  it("behind a line: about when its turn comes at the endpoint's pace, capped", () => {
    const { parking, advance } = clocked();
    for (let i = 0; i < 32; i++) {
      parking.finished("ep"); // one attempt finished every 10 ms: 100 a second
      advance(10);
    }
    // 500 already parked, at 100 a second: the next one's turn is 5 s away.
    for (let i = 0; i < 500; i++) parking.park(`d${i}`, "ep");
    expect(parking.park("late", "ep")).toBe(5_000);
    // A line longer than 30 s is capped there.
    for (let i = 500; i < 5_000; i++) parking.park(`d${i}`, "ep");
    expect(parking.park("later", "ep")).toBe(30_000);
    // Another endpoint has its own line (and no pace yet).
    expect(parking.park("other", "ep2")).toBe(1_000);
  });

  it("a job that comes back leaves the line and says which endpoint it was parked for", () => {
    const { parking, advance } = clocked();
    for (let i = 0; i < 3; i++) {
      parking.finished("ep");
      advance(100);
    }
    parking.park("a", "ep");
    parking.park("b", "ep");
    expect(parking.take("a")).toBe("ep");
    expect(parking.take("a")).toBeUndefined();
    // One (b) ahead at 10 a second: 100 ms, raised to the 1 s minimum.
    expect(parking.park("c", "ep")).toBe(1_000);
  });

  it("a pace that is no longer recent is not used, and jobs that never came back drop out of the line", () => {
    const { parking, advance } = clocked();
    for (let i = 0; i < 32; i++) {
      parking.finished("ep");
      advance(10);
    }
    for (let i = 0; i < 200; i++) parking.park(`d${i}`, "ep");
    advance(60_000); // nothing finished for a minute; the 200 went to another process
    expect(parking.park("next", "ep")).toBe(1_000);
    expect(parking.take("d0")).toBeUndefined();
  });
});
