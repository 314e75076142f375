import { describe, expect, it } from "@jest/globals";
import { createCursorCodec } from "./cursor.ts";

describe("cursor codec", () => {
  const codec = createCursorCodec("secret");
  const pos = { at: new Date("2026-01-02T03:04:05.678Z"), id: "em_abcDEF123456" };

  it("round-trips a position", () => {
    expect(codec.decode(codec.encode(pos))).toEqual(pos);
  });

  it("rejects tampering, garbage and another server's cursors", () => {
    const c = codec.encode(pos);
    const raw = Buffer.from(c, "base64url").toString();
    const forged = Buffer.from(raw.replace("em_abc", "em_abd")).toString("base64url");
    expect(codec.decode(forged)).toBeNull();
    expect(codec.decode("not a cursor")).toBeNull();
    expect(codec.decode("")).toBeNull();
    expect(codec.decode(Buffer.from("1.2.3").toString("base64url"))).toBeNull();
    expect(createCursorCodec("other").decode(c)).toBeNull();
  });
});
