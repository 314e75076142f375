import { describe, expect, it } from "@jest/globals";
import { accountVolume, FIRST_TRY_PRIORITY_CAP, RETRY_PRIORITY } from "./fairness.ts";

describe("accountVolume (the inbound queue's priorities)", () => {
  it("ranks an account's n-th recent job with every other account's n-th", () => {
    const v = accountVolume({ now: () => 0 });
    const flood = Array.from({ length: 5 }, () => v.next("acc_a"));
    expect(flood).toEqual([1, 2, 3, 4, 5]);
    expect(v.next("acc_b")).toBe(1);
    expect(v.next("acc_a")).toBe(6);
  });

  it("halves an account's count every half-life, so an account that stopped ranks first again", () => {
    let t = 0;
    const v = accountVolume({ halfLifeMs: 1_000, now: () => t });
    for (let i = 0; i < 8; i++) v.next("acc_a");
    t = 1_000;
    expect(v.next("acc_a")).toBe(5); // 8 halved, plus this one
    t = 60_000;
    expect(v.next("acc_a")).toBe(1);
  });

  it("ranks every first try ahead of retries, and bounds what it remembers", () => {
    expect(FIRST_TRY_PRIORITY_CAP).toBeLessThan(RETRY_PRIORITY);
    let t = 0;
    const v = accountVolume({ maxAccounts: 3, halfLifeMs: 1_000, now: () => t });
    for (let i = 0; i < 100; i++) v.next("acc_busy");
    v.next("acc_b");
    v.next("acc_c");
    t = 60_000; // everyone idle: forgotten to make room
    v.next("acc_d");
    expect(v.size()).toBeLessThanOrEqual(3);
    expect(v.next("acc_busy")).toBe(1);
  });
});
