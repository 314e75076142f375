import { describe, expect, it } from "@jest/globals";
import { domainDnsRecords, normalizeLocalPart, normalizePublicDomain } from "./domains.ts";

describe("normalizePublicDomain", () => {
  it.each([
    ["Example.COM", "example.com"],
    ["mail.example.co.uk.", "mail.example.co.uk"],
    ["  xn--bcher-kva.de ", "xn--bcher-kva.de"],
    ["a-b.io", "a-b.io"],
  ])("accepts %s as %s", (input, expected) => {
    expect(normalizePublicDomain(input)).toEqual({ ok: true, domain: expected });
  });

  it.each([
    ["", "must not be empty"],
    ["localhost", "at least two labels"],
    ["com", "at least two labels"],
    ["192.168.1.1", "not an IP address"],
    ["[::1]", "not an IP address"],
    ["foo.local", ".local is reserved"],
    ["foo.internal", ".internal is reserved"],
    ["foo.test", ".test is reserved"],
    ["foo.invalid", ".invalid is reserved"],
    ["foo.localhost", ".localhost is reserved"],
    ["a..com", "empty labels"],
    ["-a.com", "start or end with a hyphen"],
    ["a_b.com", "only letters, digits and hyphens"],
    [`${"a".repeat(64)}.com`, "at most 63"],
    [`${"a.".repeat(127)}com`, "at most 253"],
    ["example.c0m", "top-level domain is not valid"],
  ])("rejects %j (%s)", (input, message) => {
    const r = normalizePublicDomain(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain(message);
  });
});

describe("domainDnsRecords", () => {
  it("lists the MX with priority and one CNAME per DKIM token", () => {
    expect(domainDnsRecords("example.com", ["t1", "t2"], "mx.mailroom.dev", "mailroom.dev")).toEqual([
      { type: "MX", name: "example.com", value: "mx.mailroom.dev", priority: 10 },
      { type: "CNAME", name: "t1._domainkey.example.com", value: "t1.dkim.mailroom.dev" },
      { type: "CNAME", name: "t2._domainkey.example.com", value: "t2.dkim.mailroom.dev" },
    ]);
  });
});

describe("normalizeLocalPart", () => {
  it("lowercases and accepts the allowed characters", () => {
    expect(normalizeLocalPart("Sales.Team+EU_1-x")).toEqual({ ok: true, localPart: "sales.team+eu_1-x" });
    expect(normalizeLocalPart("a".repeat(64)).ok).toBe(true);
  });
  it.each(["", "a".repeat(65), "a b", "a@b", "ü", "a/b"])("rejects %j", (input) => {
    expect(normalizeLocalPart(input).ok).toBe(false);
  });
});
