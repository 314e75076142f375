import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createDomainDns } from "@mailroom/domain-verification";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type DnsServer, startDnsServer } from "@mailroom/testing";

/** POST /domains (records, tokens) and POST /domains/{id}/verify over real HTTP, real Postgres, loopback DNS. */
describe("domain records and verification API", () => {
  let stack: Stack;
  let dns: DnsServer;
  let acct: TestAccount;

  beforeAll(async () => {
    dns = await startDnsServer();
    stack = await startStack({
      services: { ingest: false, ruleEngine: false, dispatcher: false },
      domainDns: createDomainDns({ servers: [dns.server], timeoutMs: 250, tries: 1 }),
    });
    acct = await stack.account();
  });
  afterAll(async () => {
    await stack?.close();
    await dns?.close();
  });

  type Rec = { type: string; name: string; value: string; priority?: number };
  const publish = (records: Rec[], skip: (r: Rec) => boolean = () => false) => {
    for (const r of records) {
      if (skip(r)) continue;
      if (r.type === "MX") dns.set(r.name, "MX", [{ priority: r.priority ?? 10, exchange: r.value }]);
      else dns.set(r.name, "CNAME", [r.value]);
    }
  };

  it("POST /domains returns the MX and three DKIM CNAMEs to publish, with random tokens", async () => {
    const res = await acct.api("POST", "/api/v1/domains", { domain: "Records-Example.com" });
    expect(res.status).toBe(201);
    const { dkimTokens, dnsRecords } = res.body as { dkimTokens: string[]; dnsRecords: Rec[] };
    expect(res.body).toMatchObject({ domain: "records-example.com", status: "pending", warning: null });
    expect(dkimTokens).toHaveLength(3);
    expect(new Set(dkimTokens).size).toBe(3);
    for (const t of dkimTokens) expect(t).toMatch(/^[a-z0-9]{16,}$/);
    expect(dnsRecords).toEqual([
      { type: "MX", name: "records-example.com", value: "mx.mailroom.test", priority: 10 },
      ...dkimTokens.map((t) => ({
        type: "CNAME",
        name: `${t}._domainkey.records-example.com`,
        value: `${t}.dkim.mailroom.test`,
      })),
    ]);

    // Never reused: another domain, and the same name registered again, get fresh tokens.
    const other = await acct.api("POST", "/api/v1/domains", { domain: "records-other.com" });
    expect(other.body.dkimTokens.some((t: string) => dkimTokens.includes(t))).toBe(false);
    expect((await acct.api("DELETE", `/api/v1/domains/${res.body.id}`)).status).toBe(204);
    const again = await acct.api("POST", "/api/v1/domains", { domain: "records-example.com" });
    expect(again.status).toBe(201);
    expect(again.body.dkimTokens.some((t: string) => dkimTokens.includes(t))).toBe(false);
  });

  it("POST /domains/{id}/verify reports each record; all records observed → verified", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "verify-api.com" });
    const records = dom.body.dnsRecords as Rec[];
    const lastCname = records[3] as Rec;
    publish(records, (r) => r === lastCname);

    const partial = await acct.api("POST", `/api/v1/domains/${dom.body.id}/verify`);
    expect(partial.status).toBe(200);
    expect(partial.body).toMatchObject({ id: dom.body.id, status: "pending", verifiedAt: null });
    expect(partial.body.lastCheckedAt).not.toBeNull();
    expect(partial.body.records).toEqual([
      { ...records[0], found: true, observed: ["mx.mailroom.test"] },
      { ...records[1], found: true, observed: [records[1]?.value] },
      { ...records[2], found: true, observed: [records[2]?.value] },
      { ...lastCname, found: false, observed: [] },
    ]);

    publish([lastCname]);
    const done = await acct.api("POST", `/api/v1/domains/${dom.body.id}/verify`);
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("verified");
    expect(done.body.records.every((r: { found: boolean }) => r.found)).toBe(true);
    const got = await acct.api("GET", `/api/v1/domains/${dom.body.id}`);
    expect(got.body).toMatchObject({ status: "verified", warning: null });
    expect(got.body.verifiedAt).toEqual(done.body.verifiedAt);
  });

  it("a verified domain whose MX moved away gets a warning in GET, and stays verified", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "moved-away.com" });
    publish(dom.body.dnsRecords);
    await acct.api("POST", `/api/v1/domains/${dom.body.id}/verify`);
    dns.set("moved-away.com", "MX", [{ priority: 10, exchange: "mx.other-provider.example" }]);
    const res = await acct.api("POST", `/api/v1/domains/${dom.body.id}/verify`);
    expect(res.body.status).toBe("verified");
    expect(res.body.records[0]).toMatchObject({ found: false, observed: ["mx.other-provider.example"] });
    const got = await acct.api("GET", `/api/v1/domains/${dom.body.id}`);
    expect(got.body).toMatchObject({ status: "verified" });
    expect(got.body.warning).toContain("mx.mailroom.test");
  });

  it("a failed domain gets a new verification window", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "failed-once.com" });
    await stack.prisma.domain.update({ where: { id: dom.body.id }, data: { status: "failed", nextCheckAt: null } });
    const res = await acct.api("POST", `/api/v1/domains/${dom.body.id}/verify`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("pending");
    const row = await stack.prisma.domain.findUniqueOrThrow({ where: { id: dom.body.id } });
    expect(row.verifyStartedAt).not.toBeNull();
    expect(row.nextCheckAt).not.toBeNull();
  });

  it("a DNS timeout leaves the status alone and says the lookup failed", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "slow-dns.com" });
    publish(dom.body.dnsRecords);
    dns.setDelay(2_000);
    try {
      const res = await acct.api("POST", `/api/v1/domains/${dom.body.id}/verify`);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe("pending");
      for (const r of res.body.records) expect(r).toMatchObject({ found: false, error: "DNS lookup failed: ETIMEOUT" });
    } finally {
      dns.setDelay(0);
    }
  });

  it("404 for another account's domain or an unknown id; 403 for a read-only key", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "owned-elsewhere.com" });
    const stranger = await stack.account();
    const res = await stranger.api("POST", `/api/v1/domains/${dom.body.id}/verify`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "Domain not found" });
    expect((await acct.api("POST", "/api/v1/domains/dom_nope/verify")).status).toBe(404);
    const reader = await stack.account({ scope: "read" });
    expect((await reader.api("POST", `/api/v1/domains/${dom.body.id}/verify`)).status).toBe(403);
    // Nothing was looked up for the refused requests.
    expect(dns.queries.some((q) => q.name.toLowerCase() === "owned-elsewhere.com")).toBe(false);
  });
});
