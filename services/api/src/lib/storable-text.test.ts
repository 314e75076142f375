import { describe, expect, it } from "@jest/globals";
import { findUnstorable } from "./storable-text.ts";

/** The NUL / lone-surrogate guard on its own: the paths it names, and input of any depth. */
describe("findUnstorable", () => {
  it("names the first bad value or key by its path, in field order", () => {
    expect(findUnstorable({ a: "ok", b: ["x", "n\u0000ul"], c: "\u0000" })).toEqual([
      ["b", "1"],
      "must not contain U+0000 (NUL)",
    ]);
    expect(findUnstorable({ a: { "k\u0000": 1 } })).toEqual([["a"], "has a key that must not contain U+0000 (NUL)"]);
    expect(findUnstorable({ a: { b: "\ud800" } })).toEqual([
      ["a", "b"],
      "must be valid Unicode (it holds a lone surrogate)",
    ]);
    expect(findUnstorable({ a: [1, null, true, { b: "fine" }] })).toBeNull();
    expect(findUnstorable("\u0000")).toEqual([[], "must not contain U+0000 (NUL)"]);
  });

  it("walks 200,000 levels without overflowing the stack, and names the deepest value", () => {
    let deep: unknown = "bottom\u0000";
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const found = findUnstorable(deep);
    expect(found?.[0]).toHaveLength(200_000);
    expect(found?.[1]).toBe("must not contain U+0000 (NUL)");
    let clean: unknown = "bottom";
    for (let i = 0; i < 200_000; i++) clean = { k: clean };
    expect(findUnstorable(clean)).toBeNull();
  });
});
