import { createParking } from "./parking.ts";

/** A clock the test moves, jitter at its top (1×), 4 slots per endpoint. */
function clocked() {
  let t = 1_000_000;
  const parking = createParking({ slots: 4, minMs: 1_000, maxMs: 30_000, now: () => t, random: () => 1 });
  const advance = (ms: number) => {
    t += ms;
  };
  /** `n` attempts to `ep` that took `ms` each. */
  const attempts = (ep: string, n: number, ms: number) => {
    for (let i = 0; i < n; i++) {
      parking.started(ep, `h${i}`);
      advance(ms);
      parking.finished(ep, `h${i}`);
    }
  };
  return { parking, advance, attempts };
}

describe("parking a job for a busy endpoint", () => {
  it("knowing nothing of the endpoint yet: the minimum delay, as before", () => {
    const { parking } = clocked();
    expect(parking.park("d1", "ep")).toBe(1_000);
    expect(parking.park("d2", "ep")).toBe(1_000);
  });

  it("behind a line: about when its turn comes (4 slots, recent attempt time), capped", () => {
    const { parking, attempts } = clocked();
    attempts("ep", 10, 40); // 40 ms each, 4 at a time: 100 a second
    for (let i = 0; i < 500; i++) parking.park(`d${i}`, "ep");
    expect(parking.park("late", "ep")).toBe(5_000); // 500 ahead at 100 a second
    for (let i = 500; i < 5_000; i++) parking.park(`d${i}`, "ep");
    expect(parking.park("later", "ep")).toBe(30_000); // a longer line is capped
    expect(parking.park("other", "ep2")).toBe(1_000); // another endpoint: its own line, no measure
  });

  it("an endpoint that starts to hang is seen from the attempt still in flight", () => {
    const { parking, attempts, advance } = clocked();
    attempts("ep", 10, 4); // fast so far
    parking.started("ep", "stuck");
    advance(8_000); // one attempt has been running for 8 s
    for (let i = 0; i < 3; i++) parking.park(`d${i}`, "ep");
    expect(parking.park("next", "ep")).toBe(6_000); // 3 ahead, 4 slots, 8 s each
  });

  it("a job that comes back leaves the line and says which endpoint it was parked for", () => {
    const { parking, attempts } = clocked();
    attempts("ep", 3, 100);
    parking.park("a", "ep");
    parking.park("b", "ep");
    expect(parking.take("a")).toBe("ep");
    expect(parking.take("a")).toBeUndefined();
    expect(parking.park("c", "ep")).toBe(1_000); // one ahead: 25 ms, raised to the minimum
  });

  it("jobs that never came back drop out of the line once overdue", () => {
    const { parking, attempts, advance } = clocked();
    attempts("ep", 4, 40);
    for (let i = 0; i < 200; i++) parking.park(`d${i}`, "ep");
    advance(60_000); // the 200 went to another process
    expect(parking.park("next", "ep")).toBe(1_000);
    expect(parking.take("d0")).toBeUndefined();
  });

  it("an endpoint measured fast: a job parked in a passing jam is back after 25 attempt times (at least 50 ms)", () => {
    const { parking, attempts } = clocked();
    attempts("ep", 10, 4);
    expect(parking.park("d1", "ep")).toBe(100);
    attempts("ep2", 10, 1);
    expect(parking.park("d2", "ep2")).toBe(50);
  });
});
