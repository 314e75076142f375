import { createHmac } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { signatureHeader, verifySignature } from "./signing.ts";

describe("signatureHeader", () => {
  const body = '{"id":"dlv_1","type":"email.received"}';

  it("is Stripe's scheme: t=<s>,v1=hex(HMAC-SHA256(secret, t.body))", () => {
    const expected = createHmac("sha256", "whsec_a").update(`1700000000.${body}`).digest("hex");
    expect(signatureHeader(["whsec_a"], body, 1700000000)).toBe(`t=1700000000,v1=${expected}`);
  });

  it("signs with every secret during a rotation, and either verifies", () => {
    const header = signatureHeader(["whsec_new", "whsec_old"], body, 1700000000);
    expect(header.split(",").filter((p) => p.startsWith("v1="))).toHaveLength(2);
    const now = 1700000000 * 1000;
    expect(verifySignature("whsec_old", header, body, { now }).ok).toBe(true);
    expect(verifySignature("whsec_new", header, body, { now }).ok).toBe(true);
    expect(verifySignature("whsec_other", header, body, { now }).ok).toBe(false);
  });

  it("rejects a changed body and a stale timestamp", () => {
    const header = signatureHeader(["s"], body, 1700000000);
    expect(verifySignature("s", header, `${body} `, { now: 1700000000_000 }).ok).toBe(false);
    expect(verifySignature("s", header, body, { now: 1700000000_000 + 301_000 })).toEqual({
      ok: false,
      reason: "timestamp outside tolerance",
    });
  });
});
