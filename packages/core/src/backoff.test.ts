import { describe, expect, it } from "@jest/globals";
import { retryDelayMs } from "./backoff.ts";

describe("retryDelayMs", () => {
  it("follows spec §6.3: 1 m, 5 m, 30 m, 2 h, then every 2 h", () => {
    const minutes = [1, 2, 3, 4, 5, 6, 9].map((n) => retryDelayMs(n) / 60_000);
    expect(minutes).toEqual([1, 5, 30, 120, 120, 120, 120]);
  });

  it("scales with the configurable unit (tests use milliseconds)", () => {
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, 20))).toEqual([20, 100, 600, 2400, 2400]);
  });
});
