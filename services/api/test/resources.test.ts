import { beforeAll, describe, expect, it } from "@jest/globals";
import { API_ONLY, type Stack, startStack, type TestAccount, useStack } from "@mailroom/stack";
import { seedEmail } from "@mailroom/testing";

const V = "/api/v1";
const HOOK = "http://127.0.0.1:9/hook";

describe("REST resources: domains, addresses, endpoints, account", () => {
  let stack: Stack;
  let acct: TestAccount;
  useStack(API_ONLY, (s, a) => {
    [stack, acct] = [s, a];
  });

  describe("domains", () => {
    it("creates (201, lowercased, trailing dot stripped, pending, DNS records), gets and lists", async () => {
      const c = await acct.api("POST", `${V}/domains`, { domain: "Mail.Example.COM." });
      expect(c.status).toBe(201);
      expect(c.body).toMatchObject({ domain: "mail.example.com", status: "pending", catchAll: { enabled: false } });
      expect(c.body.dkimTokens).toHaveLength(3);
      expect(c.body.dnsRecords[0]).toEqual({
        type: "MX",
        name: "mail.example.com",
        value: "mx.mailroom.test",
        priority: 10,
      });
      expect(c.body.dnsRecords.filter((r: any) => r.type === "CNAME")).toHaveLength(3);
      expect(c.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

      const g = await acct.api("GET", `${V}/domains/${c.body.id}`);
      expect(g.status).toBe(200);
      expect(g.body).toEqual(c.body);
      const l = await acct.api("GET", `${V}/domains`);
      expect(l.status).toBe(200);
      expect(l.body.data.map((d: any) => d.id)).toContain(c.body.id);
      expect(l.body.nextCursor).toBeNull();
      const f = await acct.api("GET", `${V}/domains?status=verified`);
      expect(f.body.data.map((d: any) => d.id)).not.toContain(c.body.id);
    });

    it("409 on an already registered domain, whoever owns it", async () => {
      await acct.api("POST", `${V}/domains`, { domain: "taken.example.com" });
      const again = await acct.api("POST", `${V}/domains`, { domain: "TAKEN.example.com." });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ error: "domain: taken.example.com is already registered" });
      const other = await stack.account();
      expect((await other.api("POST", `${V}/domains`, { domain: "taken.example.com" })).status).toBe(409);
    });

    it.each([
      ["192.0.2.1", "domain: must be a domain name, not an IP address"],
      ["[2001:db8::1]", "domain: must be a domain name, not an IP address"],
      ["localhost", "domain: must have at least two labels (e.g. example.com)"],
      ["intranet", "domain: must have at least two labels (e.g. example.com)"],
      ["mail.local", "domain: .local is reserved and not public"],
      ["corp.internal", "domain: .internal is reserved and not public"],
      ["x.test", "domain: .test is reserved and not public"],
      ["x.invalid", "domain: .invalid is reserved and not public"],
      ["foo.localhost", "domain: .localhost is reserved and not public"],
      [`${"a".repeat(64)}.com`, "domain: each label must be at most 63 characters"],
      [`${"a.".repeat(127)}com`, "domain: must be at most 253 characters"],
      ["bad_label.com", "domain: labels may contain only letters, digits and hyphens (use punycode for IDNs)"],
      ["-x.com", "domain: labels must not start or end with a hyphen"],
      ["a..com", "domain: must not contain empty labels"],
      ["", "domain: must not be empty"],
    ])("400 for %j", async (domain, error) => {
      const r = await acct.api("POST", `${V}/domains`, { domain });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error });
    });

    it("400 naming the field for a missing or mistyped body", async () => {
      expect((await acct.api("POST", `${V}/domains`, {})).body).toEqual({
        error: "domain: is required and must be a string",
      });
      expect((await acct.api("POST", `${V}/domains`, { domain: 5 })).body).toEqual({
        error: "domain: is required and must be a string",
      });
      const extra = await acct.api("POST", `${V}/domains`, { domain: "x.example.org", foo: 1 });
      expect(extra.status).toBe(400);
      expect(extra.body.error).toMatch(/^body: Unrecognized key: "foo"/);
    });

    it("PATCH sets catch-all settings; unknown endpoint → 400; at least one field", async () => {
      const d = await acct.api("POST", `${V}/domains`, { domain: "catchall.example.com" });
      const ep = await acct.api("POST", `${V}/endpoints`, { url: HOOK });
      const on = await acct.api("PATCH", `${V}/domains/${d.body.id}`, {
        catchAll: { enabled: true, endpointId: ep.body.id },
      });
      expect(on.status).toBe(200);
      expect(on.body.catchAll).toEqual({ enabled: true, endpointId: ep.body.id });
      const storeOnly = await acct.api("PATCH", `${V}/domains/${d.body.id}`, { catchAll: { endpointId: null } });
      expect(storeOnly.body.catchAll).toEqual({ enabled: true, endpointId: null });
      const row = await stack.prisma.domain.findUniqueOrThrow({ where: { id: d.body.id } });
      expect([row.catchAllEnabled, row.catchAllEndpointId]).toEqual([true, null]);

      const unknown = await acct.api("PATCH", `${V}/domains/${d.body.id}`, {
        catchAll: { endpointId: "ep_nope1234567890" },
      });
      expect(unknown).toMatchObject({
        status: 400,
        body: { error: "catchAll.endpointId: unknown endpoint ep_nope1234567890" },
      });
      expect((await acct.api("PATCH", `${V}/domains/${d.body.id}`, { catchAll: {} })).body).toEqual({
        error: "catchAll: provide at least one of enabled, endpointId",
      });
      expect((await acct.api("PATCH", `${V}/domains/${d.body.id}`, { catchAll: { enabled: "yes" } })).body).toEqual({
        error: "catchAll.enabled: must be true or false",
      });
      expect((await acct.api("PATCH", `${V}/domains/${d.body.id}`, {})).body).toEqual({
        error: "catchAll: Invalid input: expected object, received undefined",
      });
    });

    it("DELETE removes the domain and its addresses (204), keeps its emails, then 404", async () => {
      const d = await acct.api("POST", `${V}/domains`, { domain: "gone.example.com" });
      const a = await acct.api("POST", `${V}/addresses`, { domainId: d.body.id, localPart: "x" });
      const em = await seedEmail(stack.prisma, acct.accountId, { domainId: d.body.id, addressId: a.body.id });
      const del = await acct.api("DELETE", `${V}/domains/${d.body.id}`);
      expect(del.status).toBe(204);
      expect(del.body).toBeNull();
      expect((await acct.api("GET", `${V}/domains/${d.body.id}`)).status).toBe(404);
      expect((await acct.api("GET", `${V}/addresses/${a.body.id}`)).status).toBe(404);
      expect((await acct.api("DELETE", `${V}/domains/${d.body.id}`)).status).toBe(404);
      const kept = await acct.api("GET", `${V}/emails/${em.id}`);
      expect(kept.status).toBe(200);
      // The name is free again.
      expect((await acct.api("POST", `${V}/domains`, { domain: "gone.example.com" })).status).toBe(201);
    });
  });

  describe("addresses", () => {
    let domainId: string;
    let endpointId: string;
    beforeAll(async () => {
      domainId = (await acct.api("POST", `${V}/domains`, { domain: "addr.example.com" })).body.id;
      endpointId = (await acct.api("POST", `${V}/endpoints`, { url: HOOK })).body.id;
    });

    it("creates (201, lowercased), store-only by default, 409 on a duplicate local part", async () => {
      const a = await acct.api("POST", `${V}/addresses`, { domainId, localPart: "Sales.Team+EU" });
      expect(a.status).toBe(201);
      expect(a.body).toEqual({
        id: expect.stringMatching(/^addr_/),
        domainId,
        localPart: "sales.team+eu",
        endpointId: null,
        active: true,
        createdAt: expect.any(String),
      });
      const dup = await acct.api("POST", `${V}/addresses`, { domainId, localPart: "SALES.TEAM+EU", endpointId });
      expect(dup).toMatchObject({
        status: 409,
        body: { error: "localPart: sales.team+eu@addr.example.com already exists" },
      });
      const routed = await acct.api("POST", `${V}/addresses`, { domainId, localPart: "routed", endpointId });
      expect(routed.body.endpointId).toBe(endpointId);
    });

    it.each([
      [{ localPart: "" }, "localPart: must be 1 to 64 characters"],
      [{ localPart: "a".repeat(65) }, "localPart: must be 1 to 64 characters"],
      [{ localPart: "a b" }, "localPart: may contain only letters, digits and the characters . _ + -"],
      [{ localPart: "a@b" }, "localPart: may contain only letters, digits and the characters . _ + -"],
      [{ localPart: "ü" }, "localPart: may contain only letters, digits and the characters . _ + -"],
      [{ localPart: 7 }, "localPart: is required and must be a string"],
      [{ localPart: "ok", domainId: undefined }, "domainId: is required and must be a domain id"],
      [{ localPart: "ok", domainId: "dom_unknown12345678" }, "domainId: unknown domain dom_unknown12345678"],
      [{ localPart: "ok", endpointId: "ep_unknown123456789" }, "endpointId: unknown endpoint ep_unknown123456789"],
      [{ localPart: "ok", endpointId: 5 }, "endpointId: must be an endpoint id or null"],
    ])("400 for %j", async (patch, error) => {
      const r = await acct.api("POST", `${V}/addresses`, { domainId, ...patch });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error });
    });

    it("accepts 64 characters and every allowed character", async () => {
      const r = await acct.api("POST", `${V}/addresses`, { domainId, localPart: `a._+-9${"z".repeat(58)}` });
      expect(r.status).toBe(201);
    });

    it("PATCH: endpoint, store-only, active; response has domain and address; rules", async () => {
      const a = (await acct.api("POST", `${V}/addresses`, { domainId, localPart: "patchme" })).body;
      const p1 = await acct.api("PATCH", `${V}/addresses/${a.id}`, { endpointId });
      expect(p1.status).toBe(200);
      expect(p1.body).toMatchObject({ endpointId, domain: "addr.example.com", address: "patchme@addr.example.com" });
      const p2 = await acct.api("PATCH", `${V}/addresses/${a.id}`, { endpointId: null, active: false });
      expect(p2.body).toMatchObject({ endpointId: null, active: false });
      expect(await stack.prisma.address.findUniqueOrThrow({ where: { id: a.id } })).toMatchObject({
        endpointId: null,
        active: false,
      });
      expect((await acct.api("PATCH", `${V}/addresses/${a.id}`, {})).body).toEqual({
        error: "body: provide at least one of endpointId, active",
      });
      expect((await acct.api("PATCH", `${V}/addresses/${a.id}`, { active: "no" })).body).toEqual({
        error: "active: must be true or false",
      });
      expect(await acct.api("PATCH", `${V}/addresses/${a.id}`, { endpointId: "ep_missing1234567" })).toMatchObject({
        status: 400,
        body: { error: "endpointId: unknown endpoint ep_missing1234567" },
      });
      expect((await acct.api("PATCH", `${V}/addresses/addr_missing1234567`, { active: true })).status).toBe(404);
    });

    it("GET one, list filtered by domainId, DELETE (204 then 404)", async () => {
      const other = (await acct.api("POST", `${V}/domains`, { domain: "addr2.example.com" })).body.id;
      const a = (await acct.api("POST", `${V}/addresses`, { domainId: other, localPart: "one" })).body;
      expect((await acct.api("GET", `${V}/addresses/${a.id}`)).body).toEqual(a);
      const l = await acct.api("GET", `${V}/addresses?domainId=${other}`);
      expect(l.body).toEqual({ data: [a], nextCursor: null });
      const all = await acct.api("GET", `${V}/addresses?limit=100`);
      expect(all.body.data.length).toBeGreaterThan(1);
      expect((await acct.api("DELETE", `${V}/addresses/${a.id}`)).status).toBe(204);
      expect((await acct.api("GET", `${V}/addresses/${a.id}`)).status).toBe(404);
      expect((await acct.api("GET", `${V}/addresses?domainId=${other}`)).body.data).toEqual([]);
    });
  });

  describe("endpoints", () => {
    it("creates with defaults; the secret is shown once and never again", async () => {
      const c = await acct.api("POST", `${V}/endpoints`, { url: HOOK });
      expect(c.status).toBe(201);
      expect(c.body).toMatchObject({
        name: "127.0.0.1",
        type: "webhook",
        url: HOOK,
        headers: {},
        timeoutSeconds: 10,
        maxAttempts: 5,
        active: true,
        failingSince: null,
      });
      expect(c.body.secret).toMatch(/^whsec_[0-9A-Za-z]{24,}$/);
      const g = await acct.api("GET", `${V}/endpoints/${c.body.id}`);
      expect(g.body.secret).toBeUndefined();
      const { secret: _s, ...withoutSecret } = c.body;
      expect(g.body).toEqual(withoutSecret);
      const l = await acct.api("GET", `${V}/endpoints`);
      expect(l.body.data.find((e: any) => e.id === c.body.id)).toEqual(withoutSecret);
      expect(JSON.stringify(l.body)).not.toContain("whsec_");
      const slack = await acct.api("POST", `${V}/endpoints`, { url: HOOK, type: "slack", name: "ops" });
      expect(slack.body).toMatchObject({ type: "slack", name: "ops" });
    });

    it.each([
      [{ url: undefined }, "url: is required and must be a string"],
      [{ url: "ftp://x.example.com/" }, "url: must be an absolute http or https URL"],
      [{ url: "not a url" }, "url: must be an absolute http or https URL"],
      [{ url: "http://u:p@127.0.0.1/" }, "url: must not contain credentials (use custom headers instead)"],
      [{ timeoutSeconds: 0 }, "timeoutSeconds: must be 1 to 30"],
      [{ timeoutSeconds: 31 }, "timeoutSeconds: must be 1 to 30"],
      [{ timeoutSeconds: 2.5 }, "timeoutSeconds: must be a whole number"],
      [{ maxAttempts: 0 }, "maxAttempts: must be 1 to 10"],
      [{ maxAttempts: 11 }, "maxAttempts: must be 1 to 10"],
      [{ type: "teams" }, "type: must be slack, discord or email (omit for a webhook)"],
      [{ name: "" }, "name: must not be empty"],
      [{ name: "x".repeat(101) }, "name: must be at most 100 characters"],
      [{ headers: { "Content-Type": "text/plain" } }, "headers.Content-Type: is reserved and cannot be overridden"],
      [{ headers: { "X-Service-Event": "x" } }, "headers.X-Service-Event: is reserved and cannot be overridden"],
      [
        { headers: { "x-inbound-signature": "x" } },
        "headers.x-inbound-signature: is reserved and cannot be overridden",
      ],
      [{ headers: { "bad header": "x" } }, "headers.bad header: is not a valid header name"],
      [
        { headers: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, "v"])) },
        "headers: at most 10 custom headers are allowed",
      ],
    ])("400 for %j", async (patch, error) => {
      const r = await acct.api("POST", `${V}/endpoints`, { url: HOOK, ...patch });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error });
    });

    it("accepts the limits: 10 headers, timeout 1 and 30, attempts 1 and 10", async () => {
      const headers = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`X-H${i}`, "v"]));
      for (const b of [
        { headers, timeoutSeconds: 1, maxAttempts: 1 },
        { timeoutSeconds: 30, maxAttempts: 10 },
      ]) {
        expect((await acct.api("POST", `${V}/endpoints`, { url: HOOK, ...b })).status).toBe(201);
      }
    });

    it("refuses a private destination when the SSRF guard is on", async () => {
      const guarded = await startStack({
        allowPrivateDestinations: false,
        services: { ingest: false, ruleEngine: false, dispatcher: false },
      });
      try {
        const a = await guarded.account();
        const r = await a.api("POST", `${V}/endpoints`, { url: "http://127.0.0.1:8080/hook" });
        expect(r.status).toBe(400);
        expect(r.body.error).toMatch(/^url: /);
        expect(await guarded.prisma.endpoint.count()).toBe(0);
      } finally {
        await guarded.close();
      }
    });

    it("PATCH changes settings (headers replace the set); type cannot change; validation as on create", async () => {
      const e = (await acct.api("POST", `${V}/endpoints`, { url: HOOK, headers: { "X-A": "1" } })).body;
      const p = await acct.api("PATCH", `${V}/endpoints/${e.id}`, {
        name: "renamed",
        headers: { "X-B": "2" },
        timeoutSeconds: 20,
        maxAttempts: 3,
        active: false,
        url: "http://127.0.0.1:10/other",
      });
      expect(p.status).toBe(200);
      expect(p.body).toMatchObject({
        name: "renamed",
        headers: { "X-B": "2" },
        timeoutSeconds: 20,
        maxAttempts: 3,
        active: false,
        url: "http://127.0.0.1:10/other",
      });
      expect(p.body.secret).toBeUndefined();
      expect((await acct.api("PATCH", `${V}/endpoints/${e.id}`, {})).body).toEqual({
        error: "body: provide at least one of name, url, headers, timeoutSeconds, maxAttempts, active",
      });
      expect((await acct.api("PATCH", `${V}/endpoints/${e.id}`, { timeoutSeconds: 31 })).body).toEqual({
        error: "timeoutSeconds: must be 1 to 30",
      });
      const t = await acct.api("PATCH", `${V}/endpoints/${e.id}`, { type: "slack" });
      expect(t.status).toBe(400);
      expect(t.body.error).toMatch(/^body: Unrecognized key: "type"/);
    });

    it("DELETE: 409 while an address, catch-all or rule uses it; 204 once free", async () => {
      const e = (await acct.api("POST", `${V}/endpoints`, { url: HOOK })).body;
      const d = (await acct.api("POST", `${V}/domains`, { domain: "epdel.example.com" })).body;
      const a = (await acct.api("POST", `${V}/addresses`, { domainId: d.id, localPart: "x", endpointId: e.id })).body;
      await acct.api("PATCH", `${V}/domains/${d.id}`, { catchAll: { enabled: true, endpointId: e.id } });
      const r1 = await acct.api("DELETE", `${V}/endpoints/${e.id}`);
      expect(r1).toMatchObject({
        status: 409,
        body: {
          error:
            "Endpoint is in use by 1 address, 1 domain catch-all; point them elsewhere or make them store-only first",
        },
      });
      await acct.api("PATCH", `${V}/addresses/${a.id}`, { endpointId: null });
      await acct.api("PATCH", `${V}/domains/${d.id}`, { catchAll: { endpointId: null } });
      await stack.prisma.shieldRule.create({
        data: {
          id: "gr_delete0test000001",
          accountId: acct.accountId,
          name: "r",
          action: "route",
          priority: 1,
          conditions: [],
          endpointIds: [e.id],
        },
      });
      expect((await acct.api("DELETE", `${V}/endpoints/${e.id}`)).body).toEqual({
        error: "Endpoint is in use by 1 shield rule; point them elsewhere or make them store-only first",
      });
      await stack.prisma.shieldRule.delete({ where: { id: "gr_delete0test000001" } });
      expect((await acct.api("DELETE", `${V}/endpoints/${e.id}`)).status).toBe(204);
      expect(await stack.prisma.endpoint.findUnique({ where: { id: e.id } })).toBeNull();
      expect((await acct.api("GET", `${V}/endpoints/${e.id}`)).status).toBe(404);
    });
  });

  describe("account", () => {
    it("shows plan, its limits and this month's usage; follows accounts set-plan", async () => {
      const a = await stack.account({ plan: "free" });
      const month = new Date().toISOString().slice(0, 7);
      await stack.prisma.usageCounter.create({ data: { accountId: a.accountId, month, received: 42 } });
      const r = await a.api("GET", `${V}/account`);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        id: a.accountId,
        name: "test",
        plan: "free",
        limits: { shieldRules: 3, monthlyAllotment: 3000 },
        usage: { month, received: 42, remaining: 2958, shieldRules: 0 },
        retentionDays: 30,
        defaultRetentionDays: 30,
        createdAt: expect.any(String),
      });
      // An operator sets retention with the admin CLI too (members: PATCH /account); "forever" shows as null.
      await stack.admin("accounts", "set-retention", "--account", a.accountId, "--days", "forever");
      expect((await a.api("GET", `${V}/account`)).body).toMatchObject({ retentionDays: null });
      await stack.admin("accounts", "set-retention", "--account", a.accountId, "--days", "90");
      expect((await a.api("GET", `${V}/account`)).body).toMatchObject({ retentionDays: 90 });
      await stack.admin("accounts", "set-plan", "--account", a.accountId, "--plan", "scale");
      const s = await a.api("GET", `${V}/account`);
      expect(s.body).toMatchObject({ plan: "scale", limits: { shieldRules: 200, monthlyAllotment: 1_000_000 } });
      // selfhosted: no cap and no allotment, shown as null; usage is still counted.
      await stack.admin("accounts", "set-plan", "--account", a.accountId, "--plan", "selfhosted");
      const h = await a.api("GET", `${V}/account`);
      expect(h.body).toMatchObject({
        plan: "selfhosted",
        limits: { shieldRules: null, monthlyAllotment: null },
        usage: { month, received: 42, remaining: null },
      });
    });
  });
});
