import { describe, expect, it } from "@jest/globals";
import { z } from "zod";
import { healthEnv, healthPortOf, sharedHostEnv } from "./health.ts";
import { parseEnv } from "./index.ts";

describe("health ports", () => {
  it("a service's own setting wins over HEALTH_PORT, which wins over its default; each is named", () => {
    expect(healthPortOf("rule-engine", {})).toEqual({
      port: 9466,
      setting: "HEALTH_PORT_RULE_ENGINE, unset: the default",
    });
    expect(healthPortOf("rule-engine", { HEALTH_PORT: "9500" })).toEqual({ port: 9500, setting: "HEALTH_PORT" });
    expect(healthPortOf("rule-engine", { HEALTH_PORT: 9500, HEALTH_PORT_RULE_ENGINE: 9600 })).toEqual({
      port: 9600,
      setting: "HEALTH_PORT_RULE_ENGINE",
    });
    // Another service's setting is not this one's.
    expect(healthPortOf("api", { HEALTH_PORT_RULE_ENGINE: "9600" })).toEqual({
      port: 9464,
      setting: "HEALTH_PORT_API, unset: the default",
    });
    expect(healthPortOf("unit", { HEALTH_PORT: 0 })).toEqual({ port: 0, setting: "HEALTH_PORT" });
  });

  it("each service's schema reads its own setting and rejects a bad one by name", () => {
    const schema = z.object(healthEnv("smtp-ingest"));
    expect(parseEnv(schema, { HEALTH_PORT_SMTP_INGEST: "9700", HEALTH_PORT_API: "1" })).toEqual({
      HEALTH_PORT_SMTP_INGEST: 9700,
      HEALTH_HOST: "0.0.0.0",
    });
    expect(() => parseEnv(schema, { HEALTH_PORT_SMTP_INGEST: "70000" })).toThrow(
      /^invalid environment: HEALTH_PORT_SMTP_INGEST: /,
    );
  });

  it("on a shared host HEALTH_PORT is a base: each service at its offset, 0 for all, its own setting first", () => {
    const ports = (env: NodeJS.ProcessEnv) =>
      (["api", "smtp-ingest", "rule-engine", "webhook-dispatcher", "outbound-sender", "domain-verifier"] as const).map(
        (s) => healthPortOf(s, sharedHostEnv(s, env)).port,
      );
    expect(ports({})).toEqual([9464, 9465, 9466, 9467, 9468, 9469]);
    expect(ports({ HEALTH_PORT: "19000" })).toEqual([19000, 19001, 19002, 19003, 19004, 19005]);
    expect(ports({ HEALTH_PORT: "0" })).toEqual([0, 0, 0, 0, 0, 0]);
    expect(ports({ HEALTH_PORT: "19000", HEALTH_PORT_RULE_ENGINE: "20000" })).toEqual([
      19000, 19001, 20000, 19003, 19004, 19005,
    ]);
    // HEALTH_PORT itself never reaches a child, and a value that is not a number is passed on under
    // the service's own name, so its env check names the variable it reads.
    expect(sharedHostEnv("api", { HEALTH_PORT: "19000" })).toEqual({ HEALTH_PORT_API: "19000" });
    expect(sharedHostEnv("api", { HEALTH_PORT: "soon" })).toEqual({ HEALTH_PORT_API: "soon" });
  });
});
