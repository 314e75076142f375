import { describe, expect, it } from "@jest/globals";
import { classifyAddress, parseIp, validateEndpointUrl } from "./ssrf.ts";

const reasonOf = (ip: string) => {
  const c = classifyAddress(ip);
  return c.public ? "public" : c.reason;
};

describe("classifyAddress", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["::1", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf::1", "link-local"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.255", "carrier-grade NAT"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["ff02::1", "multicast"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["192.0.2.10", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["2001:db8::1", "documentation"],
    ["192.0.0.8", "IETF protocol assignment"],
    ["fc00::1", "unique-local"],
    ["fd12:3456::1", "unique-local"],
    ["fec0::1", "site-local"],
    ["2001::1", "Teredo"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"],
    ["::ffff:8.8.8.8", "IPv4-mapped"],
    ["::ffff:127.0.0.1", "IPv4-mapped IPv6 address (embeds 127.0.0.1, loopback"],
    ["::ffff:7f00:1", "IPv4-mapped IPv6 address (embeds 127.0.0.1, loopback"],
    ["::127.0.0.1", "IPv4-compatible IPv6 address (embeds 127.0.0.1, loopback"],
    ["::8.8.8.8", "IPv4-compatible"],
    ["64:ff9b::7f00:1", "NAT64 address embedding 127.0.0.1, loopback"],
    ["64:ff9b::10.1.2.3", "NAT64 address embedding 10.1.2.3, private"],
    ["64:ff9b:1::1", "local-use NAT64"],
    ["2002:c0a8:0101::1", "6to4 address embedding 192.168.1.1, private"],
    ["2002:7f00:1::", "6to4 address embedding 127.0.0.1, loopback"],
    ["100::1", "discard-only"],
    ["4000::1", "reserved"],
    ["not-an-ip", "not an IP address"],
    ["1.2.3", "not an IP address"],
  ])("refuses %s (%s)", (ip, reason) => {
    expect(reasonOf(ip)).toContain(reason);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.15.255.255",
    "172.32.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "169.253.255.255",
    "198.17.255.255",
    "198.20.0.0",
    "192.0.1.1",
    "192.169.0.1",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001::200e",
    "64:ff9b::808:808", // NAT64 of 8.8.8.8
    "2002:0808:0808::1", // 6to4 of 8.8.8.8
    "2001:4860:4860::8888",
  ])("accepts %s", (ip) => {
    expect(classifyAddress(ip)).toEqual({ public: true });
  });
});

describe("parseIp", () => {
  it("expands IPv6 compression and embedded IPv4", () => {
    expect(parseIp("::ffff:1.2.3.4")).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
    expect(parseIp("2001:db8::")?.slice(0, 4)).toEqual([0x20, 0x01, 0x0d, 0xb8]);
    expect(parseIp("1:2:3:4:5:6:7:8")).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
    expect(parseIp("::")).toEqual(Array(16).fill(0));
    expect(parseIp("300.1.1.1")).toBeNull();
  });
});

describe("validateEndpointUrl", () => {
  const error = (url: string) => {
    const r = validateEndpointUrl(url);
    return r.ok ? null : r.error;
  };

  it("accepts public http(s) URLs and keeps them parsed", () => {
    const r = validateEndpointUrl("https://hooks.example.com:8443/in?x=1");
    expect(r.ok && r.url.port).toBe("8443");
    expect(error("http://8.8.8.8/hook")).toBeNull();
    expect(error("http://[2606:4700:4700::1111]/")).toBeNull();
  });

  it.each([
    "http://127.0.0.1/",
    "http://2130706433/", // decimal
    "http://0x7f.1/", // hex + short form
    "http://0177.0.0.1/", // octal
    "http://127.1/",
    "http://0/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[fc00::1]:8080/",
    "http://169.254.169.254/latest/meta-data/",
    "http://localhost:3000/",
    "http://api.localhost./",
    "http://%31%32%37.0.0.1/", // percent-encoded host
  ])("refuses %s as non-public", (url) => {
    expect(error(url)).toContain("non-public URL");
  });

  it("refuses other schemes, credentials, missing hosts and over-long URLs", () => {
    expect(error("ftp://example.com/")).toBe("must use http or https");
    expect(error("file:///etc/passwd")).toBe("must use http or https");
    expect(error("https://user:pw@example.com/")).toBe("must not contain credentials");
    expect(error("https://user@example.com/")).toBe("must not contain credentials");
    expect(error("not a url")).toBe("is not a valid URL");
    expect(error("http://")).toBe("is not a valid URL");
    expect(error(`https://example.com/${"a".repeat(2048)}`)).toBe("must be at most 2048 characters");
    expect(error(`https://example.com/${"a".repeat(2048 - 20)}`)).toBeNull();
  });

  it("lets private literals through only when allowPrivate is set (local development)", () => {
    expect(validateEndpointUrl("http://127.0.0.1:9/", { allowPrivate: true }).ok).toBe(true);
    expect(validateEndpointUrl("ftp://127.0.0.1/", { allowPrivate: true }).ok).toBe(false);
  });
});
