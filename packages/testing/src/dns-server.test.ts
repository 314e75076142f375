import dns from "node:dns";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type DnsServer, startDnsServer } from "./dns-server.ts";

describe("startDnsServer", () => {
  let server: DnsServer;
  const resolver = new dns.promises.Resolver({ timeout: 1_000, tries: 1 });

  beforeAll(async () => {
    server = await startDnsServer({
      "example.test": {
        A: ["192.0.2.10", "192.0.2.11"],
        AAAA: ["2001:db8::1", "::ffff:10.0.0.1"],
        MX: [{ priority: 10, exchange: "mx.mailroom.test" }],
        TXT: ["v=spf1 -all"],
      },
      "tok1._domainkey.example.test": { CNAME: ["tok1.dkim.mailroom.test"] },
      "www.example.test": { CNAME: ["example.test"] },
    });
    resolver.setServers([server.server]);
  });
  afterAll(() => server.close());

  it("serves A, AAAA, MX, TXT and CNAME records", async () => {
    expect((await resolver.resolve4("example.test")).sort()).toEqual(["192.0.2.10", "192.0.2.11"]);
    expect((await resolver.resolve6("example.test")).sort()).toEqual(["2001:db8::1", "::ffff:10.0.0.1"]);
    expect(await resolver.resolveMx("example.test")).toMatchObject([{ priority: 10, exchange: "mx.mailroom.test" }]);
    expect(await resolver.resolveTxt("example.test")).toEqual([["v=spf1 -all"]]);
    expect(await resolver.resolveCname("tok1._domainkey.example.test")).toEqual(["tok1.dkim.mailroom.test"]);
  });

  it("follows a CNAME inside the zone for address queries", async () => {
    expect((await resolver.resolve4("www.example.test")).sort()).toEqual(["192.0.2.10", "192.0.2.11"]);
  });

  it("ignores case and a trailing dot, and answers NXDOMAIN / NODATA like a real server", async () => {
    expect(await resolver.resolve4("EXAMPLE.Test.")).toHaveLength(2);
    await expect(resolver.resolve4("missing.example.test")).rejects.toMatchObject({ code: "ENOTFOUND" });
    await expect(resolver.resolveCname("example.test")).rejects.toMatchObject({ code: "ENODATA" });
    // `_domainkey.example.test` has no records but a child: an empty non-terminal, not NXDOMAIN.
    await expect(resolver.resolveTxt("_domainkey.example.test")).rejects.toMatchObject({ code: "ENODATA" });
  });

  it("sees changes at once (TTL 0: nothing cached) and records the questions", async () => {
    server.set("mutable.test", "A", ["203.0.113.1"]);
    expect(await resolver.resolve4("mutable.test")).toEqual(["203.0.113.1"]);
    server.set("Mutable.Test.", "A", ["203.0.113.2"]);
    expect(await resolver.resolve4("mutable.test")).toEqual(["203.0.113.2"]);
    server.remove("mutable.test", "A");
    await expect(resolver.resolve4("mutable.test")).rejects.toMatchObject({ code: "ENODATA" });
    server.remove("mutable.test");
    await expect(resolver.resolve4("mutable.test")).rejects.toMatchObject({ code: "ENOTFOUND" });
    expect(server.queries).toContainEqual({ name: "mutable.test", type: "A" });
  });

  it("splits long TXT records into 255-byte strings and falls back to TCP when UDP is too small", async () => {
    const key = `v=DKIM1; k=rsa; p=${"A".repeat(3000)}`;
    server.set("big._domainkey.example.test", "TXT", [key]);
    const [record] = await resolver.resolveTxt("big._domainkey.example.test");
    expect(record?.every((chunk) => chunk.length <= 255)).toBe(true);
    expect(record?.join("")).toBe(key);
    // Asked twice: over UDP (answered truncated) and again over TCP.
    expect(server.queries.filter((q) => q.name === "big._domainkey.example.test")).toHaveLength(2);
  });

  it("holds answers back with setDelay so resolvers time out", async () => {
    const impatient = new dns.promises.Resolver({ timeout: 100, tries: 1 });
    impatient.setServers([server.server]);
    server.setDelay(500);
    try {
      await expect(impatient.resolve4("example.test")).rejects.toMatchObject({ code: "ETIMEOUT" });
    } finally {
      server.setDelay(0);
    }
    expect(await resolver.resolve4("example.test")).toHaveLength(2);
  });

  it("rejects malformed record values when they are set, not when queried", () => {
    expect(() => server.set("x.test", "A", ["not-an-ip"])).toThrow(/bad A value/);
    expect(() => server.set("x.test", "AAAA", ["10.0.0.1"])).toThrow(/bad AAAA value/);
  });
});
