import { describe, expect, it } from "@jest/globals";
import { loadApiEnv } from "@mailroom/api";

/** DEFAULT_RETENTION_DAYS as the API reads it (to show it): days, "forever", or a refusal naming it. */
describe("DEFAULT_RETENTION_DAYS (api)", () => {
  it("defaults to 30 days; takes a number of days or forever; empty counts as unset", () => {
    expect(loadApiEnv({}).DEFAULT_RETENTION_DAYS).toBe(30);
    expect(loadApiEnv({ DEFAULT_RETENTION_DAYS: "" }).DEFAULT_RETENTION_DAYS).toBe(30);
    expect(loadApiEnv({ DEFAULT_RETENTION_DAYS: "365" }).DEFAULT_RETENTION_DAYS).toBe(365);
    expect(loadApiEnv({ DEFAULT_RETENTION_DAYS: "forever" }).DEFAULT_RETENTION_DAYS).toBeNull();
  });
  it.each(["0", "3651", "1.5", "never", "-3"])("refuses %j, naming the variable", (v) => {
    expect(() => loadApiEnv({ DEFAULT_RETENTION_DAYS: v })).toThrow(/DEFAULT_RETENTION_DAYS.*from 1 to 3650/);
  });
});
