import { describe, expect, it } from "@jest/globals";
import { networkOf } from "./net-prefix.ts";

describe("networkOf (the per-network connection cap)", () => {
  it("groups IPv4 by /24", () => {
    expect(networkOf("192.0.2.1")).toBe("192.0.2.0/24");
    expect(networkOf("192.0.2.254")).toBe(networkOf("192.0.2.1"));
    expect(networkOf("192.0.3.1")).not.toBe(networkOf("192.0.2.1"));
    expect(networkOf("::ffff:192.0.2.7")).toBe("192.0.2.0/24"); // a dual-stack listener's form
  });

  it("groups IPv6 by /64, whatever the notation", () => {
    const net = networkOf("2001:db8:1:2::1");
    expect(net).toBe("2001:db8:1:2::/64");
    expect(networkOf("2001:0DB8:0001:0002:ffff:ffff:ffff:ffff")).toBe(net);
    expect(networkOf("2001:db8:1:2:0:0:0:9")).toBe(net);
    expect(networkOf("2001:db8:1:3::1")).not.toBe(net);
    expect(networkOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(networkOf("::1")).toBe("0:0:0:0::/64");
    expect(networkOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(networkOf("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64");
  });
});
