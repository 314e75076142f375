import { describe, expect, it } from "@jest/globals";
import { loadApiEnv } from "@mailroom/api";
import { loadVerifierEnv } from "@mailroom/domain-verifier";
import { loadRuleEngineEnv } from "@mailroom/rule-engine";
import { loadDispatcherEnv } from "@mailroom/webhook-dispatcher";

/**
 * Issue 14 item 5: every service that reads DNS_SERVERS parses it with the one definition in
 * @mailroom/config and refuses a malformed value at start (the rule engine and the dispatcher used to
 * take any string and fail, or silently ask the system's resolvers, later).
 */
const loaders = {
  api: loadApiEnv,
  "webhook-dispatcher": loadDispatcherEnv,
  "rule-engine": loadRuleEngineEnv,
  "domain-verifier": loadVerifierEnv,
} as const;

describe.each(Object.entries(loaders))("DNS_SERVERS in %s", (_service, load) => {
  it("unset or empty: the system's resolvers (an empty list)", () => {
    expect(load({}).DNS_SERVERS).toEqual([]);
    expect(load({ DNS_SERVERS: " " }).DNS_SERVERS).toEqual([]);
  });

  it("host, host:port and [v6]:port entries, comma or space separated", () => {
    expect(load({ DNS_SERVERS: "127.0.0.1:5353, 1.1.1.1 [::1]:53,::1" }).DNS_SERVERS).toEqual([
      "127.0.0.1:5353",
      "1.1.1.1",
      "[::1]:53",
      "::1",
    ]);
  });

  it.each(["127.0.0.1:99999", "dns.google", "1.2.3", "127.0.0.1,not-an-ip"])(
    "refuses %p, naming the variable",
    (value) => {
      expect(() => load({ DNS_SERVERS: value })).toThrow(/DNS_SERVERS: not a list of DNS servers/);
    },
  );
});
