import { describe, expect, it } from "@jest/globals";
import { loadSenderEnv } from "./env.ts";

describe("outbound-sender env", () => {
  it("defaults to a local MTA and reads the relay and retry settings", () => {
    expect(loadSenderEnv({})).toMatchObject({ SMTP_RELAY_URL: "smtp://127.0.0.1:25", OUTBOUND_MAX_ATTEMPTS: 8 });
    const env = loadSenderEnv({ SMTP_RELAY_URL: "smtps://u:p@relay.example:465", OUTBOUND_MAX_ATTEMPTS: "3" });
    expect(env).toMatchObject({ SMTP_RELAY_URL: "smtps://u:p@relay.example:465", OUTBOUND_MAX_ATTEMPTS: 3 });
  });

  it("fails with one line naming the bad variable", () => {
    expect(() => loadSenderEnv({ SMTP_RELAY_URL: "http://relay.example" })).toThrow(
      /^invalid environment: SMTP_RELAY_URL: must be an smtp:\/\/ or smtps:\/\/ URL$/,
    );
    expect(() => loadSenderEnv({ OUTBOUND_MAX_ATTEMPTS: "0" })).toThrow(/OUTBOUND_MAX_ATTEMPTS/);
  });
});
