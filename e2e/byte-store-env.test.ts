import { describe, expect, it } from "@jest/globals";
import { loadApiEnv } from "@mailroom/api";
import { loadVerifierEnv } from "@mailroom/domain-verifier";
import { loadSenderEnv } from "@mailroom/outbound-sender";
import { loadRuleEngineEnv } from "@mailroom/rule-engine";
import { byteStoreConfig } from "@mailroom/storage";
import { loadDispatcherEnv } from "@mailroom/webhook-dispatcher";

/**
 * Every service that touches message bytes reads BYTE_STORE the same way, and refuses to start
 * (EnvError naming the variables) when `s3` is chosen without a bucket and credentials.
 */
const loaders = {
  api: loadApiEnv,
  "rule-engine": loadRuleEngineEnv,
  "webhook-dispatcher": loadDispatcherEnv,
  "outbound-sender": loadSenderEnv,
  "domain-verifier": loadVerifierEnv,
};

describe.each(Object.entries(loaders))("%s", (_name, load) => {
  it("defaults to Postgres", () => {
    expect(byteStoreConfig(load({}))).toEqual({ backend: "postgres" });
  });
  it("refuses BYTE_STORE=s3 without bucket and credentials, naming them", () => {
    expect(() => load({ BYTE_STORE: "s3" })).toThrow(
      /S3_BUCKET: is required when BYTE_STORE=s3.*S3_ACCESS_KEY_ID.*S3_SECRET_ACCESS_KEY/,
    );
    expect(() => load({ BYTE_STORE: "s4" })).toThrow(/BYTE_STORE/);
  });
  it("accepts a complete s3 configuration", () => {
    const env = load({ BYTE_STORE: "s3", S3_BUCKET: "mail", S3_ACCESS_KEY_ID: "k", S3_SECRET_ACCESS_KEY: "s" });
    expect(byteStoreConfig(env)).toMatchObject({ backend: "s3", s3: { bucket: "mail", region: "us-east-1" } });
  });
});
