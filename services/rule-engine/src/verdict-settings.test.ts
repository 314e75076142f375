import { describe, expect, it } from "@jest/globals";
import { dmarcOverride, readArc } from "./arc.ts";
import { parseClamdUrl } from "./clamd.ts";
import { loadRuleEngineEnv } from "./env.ts";

/** CLAMD_URL, CLAMD_TIMEOUT_MS and ARC_TRUSTED_SEALERS as the rule engine reads them at start. */
describe("rule-engine env: virus and ARC settings", () => {
  it("defaults: no clamd, a 15 s deadline, no trusted sealers", () => {
    const env = loadRuleEngineEnv({});
    expect(env.CLAMD_URL).toBeUndefined();
    expect(env.CLAMD_TIMEOUT_MS).toBe(15_000);
    expect([...env.ARC_TRUSTED_SEALERS]).toEqual([]);
  });

  it.each([
    ["tcp://127.0.0.1:3310", { host: "127.0.0.1", port: 3310 }],
    ["tcp://clamd.mail.svc:3310", { host: "clamd.mail.svc", port: 3310 }],
    ["tcp://[::1]:3310", { host: "::1", port: 3310 }],
    ["unix:///run/clamav/clamd.ctl", { path: "/run/clamav/clamd.ctl" }],
    ["/run/clamav/clamd.ctl", { path: "/run/clamav/clamd.ctl" }],
  ])("CLAMD_URL %s", (url, address) => {
    expect(loadRuleEngineEnv({ CLAMD_URL: url }).CLAMD_URL).toEqual(address);
  });

  it.each([
    ["http://127.0.0.1:3310", /CLAMD_URL: unsupported scheme http:/],
    ["tcp://127.0.0.1", /CLAMD_URL: tcp:\/\/ needs a host and a port/],
    ["clamd:3310", /CLAMD_URL: unsupported scheme clamd:/],
    ["unix://relative/path", /CLAMD_URL: unix: needs an absolute path/],
    ["not a url", /CLAMD_URL: must be tcp:\/\/host:port/],
  ])("refuses CLAMD_URL=%s, naming it", (url, message) => {
    expect(() => loadRuleEngineEnv({ CLAMD_URL: url })).toThrow(message);
    expect(typeof parseClamdUrl(url)).toBe("string");
  });

  it("ARC_TRUSTED_SEALERS: commas or spaces, case and a trailing dot ignored; a non-domain refused", () => {
    const env = loadRuleEngineEnv({ ARC_TRUSTED_SEALERS: "Google.com, lists.example.org. ,fastmail.com" });
    expect([...env.ARC_TRUSTED_SEALERS]).toEqual(["google.com", "lists.example.org", "fastmail.com"]);
    expect(() => loadRuleEngineEnv({ ARC_TRUSTED_SEALERS: "google.com,http://x" })).toThrow(
      /ARC_TRUSTED_SEALERS: "http:\/\/x" is not a domain name/,
    );
    expect(() => loadRuleEngineEnv({ CLAMD_TIMEOUT_MS: "0" })).toThrow(/CLAMD_TIMEOUT_MS/);
  });
});

describe("DMARC override by a trusted ARC sealer", () => {
  const trusted = new Set(["lists.example"]);
  const chain = (d: string) => [{ "arc-seal": { parsed: { d: { value: d } } } }];
  const pass = (d: string, dmarc?: string) =>
    readArc({
      status: { result: "pass" },
      i: 1,
      chain: chain(d),
      ...(dmarc ? { authenticationResults: { dmarc: { result: dmarc } } } : {}),
    });

  it("applies only to a DMARC failure with a passing chain whose newest sealer is trusted and recorded dmarc=pass", () => {
    expect(dmarcOverride(true, pass("Lists.Example.", "pass"), trusted).overridden).toBe(true);
    expect(dmarcOverride(false, pass("lists.example", "pass"), trusted)).toEqual({ overridden: false, reason: null });
    expect(dmarcOverride(true, pass("other.example", "pass"), trusted)).toEqual({
      overridden: false,
      reason: "not overridden: ARC sealer other.example is not in ARC_TRUSTED_SEALERS",
    });
    expect(dmarcOverride(true, pass("lists.example", "fail"), trusted)).toEqual({
      overridden: false,
      reason: "not overridden: trusted ARC sealer lists.example recorded dmarc=fail",
    });
    expect(dmarcOverride(true, pass("lists.example"), trusted).reason).toBe(
      "not overridden: trusted ARC sealer lists.example recorded no DMARC result",
    );
    const failed = readArc({ status: { result: "fail", comment: "i=1 seal signature validation failed" }, i: 1 });
    expect(failed.reason).toBe("fail: i=1 seal signature validation failed");
    expect(dmarcOverride(true, failed, trusted)).toEqual({ overridden: false, reason: null });
    expect(readArc(false)).toEqual({ result: "none", sealer: null, sealerDmarc: null, reason: null });
  });
});
