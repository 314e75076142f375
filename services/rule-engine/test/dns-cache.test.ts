import { generateKeyPairSync } from "node:crypto";
import { promises as nodeDns } from "node:dns";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { type DnsServer, startDnsServer } from "@mailroom/testing";
import { dkimSign } from "mailauth";
import { createDnsResolve } from "../src/resolver.ts";
import { authVerdicts } from "../src/verdicts.ts";

/**
 * The rule engine's DNS cache against a real DNS server on loopback, counting the questions the
 * server receives. The clock is injected so that TTL expiry is tested without waiting.
 */
describe("DNS cache shared by SPF, DKIM and DMARC", () => {
  let dns: DnsServer;
  let clock = 1_000_000;
  const now = () => clock;
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const pub = publicKey.export({ type: "spki", format: "der" }).toString("base64");

  beforeAll(async () => {
    dns = await startDnsServer({
      "signed.example": {
        TXT: ["v=spf1 ip4:127.0.0.1 -all"],
        A: ["192.0.2.7"],
        MX: [{ priority: 5, exchange: "mx.signed.example" }],
      },
      "sel1._domainkey.signed.example": { TXT: [`v=DKIM1; k=rsa; p=${pub}`] },
      "_dmarc.signed.example": { TXT: ["v=DMARC1; p=reject; adkim=s; aspf=s"] },
      // Too big for a UDP answer: the server truncates it and the client must ask again over TCP.
      "big.signed.example": { TXT: [`v=spf1 ${"include:x.example ".repeat(120)}-all`] },
    });
  });
  afterAll(async () => {
    await dns?.close();
  });
  beforeEach(() => {
    dns.queries.length = 0;
    dns.setTtl(300);
    dns.setNegativeTtl(60);
    dns.setDelay(0);
  });

  const count = (name: string, type: string) => dns.queries.filter((q) => q.name === name && q.type === type).length;

  const signedMessage = async (id: string) => {
    const raw = `From: Alice <alice@signed.example>\r\nTo: in@verdicts.example\r\nSubject: cache\r\nMessage-ID: <${id}@signed.example>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\nBody.\r\n`;
    const r = await dkimSign(raw, {
      canonicalization: "relaxed/relaxed",
      signatureData: [{ signingDomain: "signed.example", selector: "sel1", privateKey: pem, algorithm: "rsa-sha256" }],
    } as unknown as Parameters<typeof dkimSign>[1]);
    return Buffer.from(r.signatures + raw);
  };
  const verdicts = async (resolve: ReturnType<typeof createDnsResolve>, id: string) =>
    authVerdicts(
      {
        raw: await signedMessage(id),
        ip: "127.0.0.1",
        helo: "mx.signed.example",
        mailFrom: "bounce@signed.example",
        mta: "mx.test",
      },
      resolve,
    );

  it("a second message from the same sender makes no DNS query, and gets the same verdicts", async () => {
    const resolve = createDnsResolve([dns.server], { now });
    const first = await verdicts(resolve, "c1");
    expect(first).toMatchObject({ spf: "PASS", dkim: "PASS", dmarc: "PASS", arc: "GRAY" });
    const asked = dns.queries.length;
    expect(asked).toBeGreaterThanOrEqual(3); // SPF TXT, DKIM key, DMARC record (at least)
    const second = await verdicts(resolve, "c2");
    expect(second).toEqual(first);
    expect(dns.queries.length).toBe(asked);
  });

  it("answers have the shapes of dns.promises.resolve", async () => {
    const resolve = createDnsResolve([dns.server], { now });
    const node = new nodeDns.Resolver();
    node.setServers([dns.server]);
    for (const [name, type] of [
      ["signed.example", "TXT"],
      ["signed.example", "A"],
      ["sel1._domainkey.signed.example", "TXT"],
      ["big.signed.example", "TXT"],
    ] as const) {
      expect(await resolve(name, type)).toEqual(await node.resolve(name, type as "TXT"));
    }
    // Node's resolve(…, "MX") adds type: "MX"; mailauth reads exchange and priority.
    const mx = (await node.resolve("signed.example", "MX")).map(({ exchange, priority }) => ({ exchange, priority }));
    expect(await resolve("signed.example", "MX")).toEqual(mx);
    for (const [name, type] of [
      ["nowhere.example", "TXT"],
      ["signed.example", "AAAA"],
    ] as const) {
      const ours = await resolve(name, type).catch((e: NodeJS.ErrnoException) => e.code);
      const theirs = await node.resolve(name, type as "TXT").catch((e: NodeJS.ErrnoException) => e.code);
      expect(ours).toBe(theirs);
    }
  });

  it("an answer is asked again once its TTL has passed, not before", async () => {
    const resolve = createDnsResolve([dns.server], { now });
    dns.setTtl(30);
    await resolve("signed.example", "A");
    clock += 29_000;
    await resolve("signed.example", "A");
    expect(count("signed.example", "A")).toBe(1);
    dns.set("signed.example", "A", ["192.0.2.8"]);
    clock += 1_001;
    expect(await resolve("signed.example", "A")).toEqual(["192.0.2.8"]);
    expect(count("signed.example", "A")).toBe(2);
    dns.set("signed.example", "A", ["192.0.2.7"]);
  });

  it("TTL 0 is never cached", async () => {
    const resolve = createDnsResolve([dns.server], { now });
    dns.setTtl(0);
    await resolve("signed.example", "TXT");
    await resolve("signed.example", "TXT");
    expect(count("signed.example", "TXT")).toBe(2);
  });

  it("NXDOMAIN and NODATA are cached for the SOA's negative TTL, capped; without an SOA not at all", async () => {
    const resolve = createDnsResolve([dns.server], { now, negativeTtlMaxS: 45 });
    dns.setNegativeTtl(600); // capped to 45 s
    for (let i = 0; i < 3; i++) {
      await expect(resolve("nowhere.example", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
      await expect(resolve("signed.example", "AAAA")).rejects.toMatchObject({ code: "ENODATA" });
    }
    expect(count("nowhere.example", "TXT")).toBe(1);
    expect(count("signed.example", "AAAA")).toBe(1);
    clock += 45_001;
    await expect(resolve("nowhere.example", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    expect(count("nowhere.example", "TXT")).toBe(2);

    dns.setNegativeTtl(null);
    await expect(resolve("absent.example", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    await expect(resolve("absent.example", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    expect(count("absent.example", "TXT")).toBe(2);
  });

  it("each caller gets its own error object (mailauth annotates them)", async () => {
    const resolve = createDnsResolve([dns.server], { now });
    const a = await resolve("nowhere.example", "TXT").catch((e: unknown) => e);
    const b = await resolve("nowhere.example", "TXT").catch((e: unknown) => e);
    expect(a).not.toBe(b);
  });

  it("SERVFAIL is remembered for errorTtlMs only", async () => {
    const resolve = createDnsResolve([dns.server], { now, errorTtlMs: 2_000, tries: 1 });
    dns.setFailure("broken.example", "SERVFAIL");
    try {
      await expect(resolve("broken.example", "TXT")).rejects.toMatchObject({ code: "ESERVFAIL" });
      await expect(resolve("broken.example", "TXT")).rejects.toMatchObject({ code: "ESERVFAIL" });
      expect(count("broken.example", "TXT")).toBe(1);
      clock += 2_001;
      await expect(resolve("broken.example", "TXT")).rejects.toMatchObject({ code: "ESERVFAIL" });
      expect(count("broken.example", "TXT")).toBe(2);
    } finally {
      dns.setFailure("broken.example", null);
    }
  });

  it("identical questions in flight share one query", async () => {
    const resolve = createDnsResolve([dns.server], { now });
    dns.setDelay(50);
    const all = await Promise.all(Array.from({ length: 20 }, () => resolve("signed.example", "MX")));
    expect(
      all.every((r) => JSON.stringify(r) === JSON.stringify([{ priority: 5, exchange: "mx.signed.example" }])),
    ).toBe(true);
    expect(count("signed.example", "MX")).toBe(1);
  });

  it("no more than maxInFlight queries are on the wire at once", async () => {
    const resolve = createDnsResolve([dns.server], { now, maxInFlight: 3, timeoutMs: 10_000 });
    dns.setDelay(20);
    const names = Array.from({ length: 12 }, (_, i) => `n${i}.example`);
    const settled = await Promise.allSettled(names.map((n) => resolve(n, "TXT")));
    expect(settled.every((s) => s.status === "rejected")).toBe(true);
    expect(names.every((n) => count(n, "TXT") === 1)).toBe(true);
    expect(dns.peakPending).toBeLessThanOrEqual(3);
  });

  it("evicts the least recently used answer beyond maxEntries", async () => {
    const resolve = createDnsResolve([dns.server], { now, maxEntries: 2 });
    await resolve("signed.example", "TXT");
    await resolve("signed.example", "A");
    await resolve("signed.example", "TXT"); // TXT is now the most recent
    await resolve("signed.example", "MX"); // evicts A
    expect(resolve.size).toBe(2);
    await resolve("signed.example", "TXT");
    await resolve("signed.example", "A");
    expect(count("signed.example", "TXT")).toBe(1);
    expect(count("signed.example", "A")).toBe(2);
  });
});
