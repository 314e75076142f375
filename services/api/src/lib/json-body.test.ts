import { describe, expect, it } from "@jest/globals";
import { jsonDepthExceeds } from "./json-body.ts";

const over = (text: string, max: number) => jsonDepthExceeds(Buffer.from(text), max);

/** The depth scan that runs on the raw bytes before JSON.parse. */
describe("jsonDepthExceeds", () => {
  it("counts objects and arrays, not brackets inside strings or after escaped quotes", () => {
    expect(over('{"a":[{"b":[1]}]}', 4)).toBe(false);
    expect(over('{"a":[{"b":[1]}]}', 3)).toBe(true);
    expect(over('{"a":"[[[[[[[[{{{{"}', 1)).toBe(false);
    expect(over('{"a":"\\"[[[[","b":"\\\\"}', 1)).toBe(false);
    expect(over('["\\\\",[[]]]', 2)).toBe(true);
    expect(over(`{"é":"日本[[[["}`, 1)).toBe(false);
  });

  it("stops at the first level past the limit of a 10,000-deep body", () => {
    expect(over(`${"[".repeat(10_000)}${"]".repeat(10_000)}`, 32)).toBe(true);
    expect(over(`${"[".repeat(32)}${"]".repeat(32)}`, 32)).toBe(false);
  });
});
