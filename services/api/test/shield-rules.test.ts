import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { shieldRuleListSchema, shieldRuleSchema } from "../src/routes/shield-schemas.ts";

/** The shield-rule API over real HTTP against a real database (no SMTP: see e2e/shield-*.test.ts). */
describe("shield rules API", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const cond = (value = "invoice") => ({ field: "subject", operator: "contains", value });
  const rule = (over: Record<string, unknown> = {}) => ({ name: "r", action: "block", conditions: [cond()], ...over });
  const priorities = async (acct: TestAccount) =>
    (await acct.api("GET", "/api/v1/shield-rules")).body.data.map((r: { id: string; priority: number }) => [
      r.id,
      r.priority,
    ]);
  const endpoint = async (acct: TestAccount, type?: string) => {
    const res = await acct.api("POST", "/api/v1/endpoints", {
      url: "http://127.0.0.1:9/hook",
      ...(type ? { type } : {}),
    });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const domainAndAddress = async (acct: TestAccount, name: string) => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: name });
    expect(dom.status).toBe(201);
    const addr = await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "support" });
    expect(addr.status).toBe(201);
    return { domainId: dom.body.id as string, addressId: addr.body.id as string };
  };

  describe("POST /shield-rules", () => {
    it("creates a rule (201) with every field, scope and an appended priority", async () => {
      const acct = await stack.account();
      const first = await acct.api("POST", "/api/v1/shield-rules", rule({ name: "  Block invoices " }));
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        id: expect.stringMatching(/^gr_/),
        name: "Block invoices",
        action: "block",
        priority: 1,
        enabled: true,
        scope: "account",
        domainId: null,
        addressId: null,
        conditions: [cond()],
        endpointIds: [],
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
      expect(shieldRuleSchema.safeParse(first.body).error).toBeUndefined();
      const second = await acct.api("POST", "/api/v1/shield-rules", rule({ action: "allow" }));
      expect(second.body.priority).toBe(2);
      const got = await acct.api("GET", `/api/v1/shield-rules/${first.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body).toEqual(first.body);
    });

    it("sets scope domain or address from domainId / addressId", async () => {
      const acct = await stack.account({ plan: "scale" });
      const { domainId, addressId } = await domainAndAddress(acct, "scopes.example.com");
      const d = await acct.api("POST", "/api/v1/shield-rules", rule({ domainId }));
      expect(d.status).toBe(201);
      expect(d.body).toMatchObject({ scope: "domain", domainId, addressId: null });
      const a = await acct.api("POST", "/api/v1/shield-rules", rule({ addressId }));
      expect(a.body).toMatchObject({ scope: "address", domainId: null, addressId });
    });

    it.each([
      ["name over 60 chars", { name: "x".repeat(61) }, /^name: must be at most 60 characters$/],
      ["missing name", { name: undefined }, /^name: is required$/],
      ["unknown action", { action: "drop" }, /^action: "drop" is not a valid action/],
      ["no conditions", { conditions: [] }, /^conditions: must have at least 1 condition$/],
      ["nine conditions", { conditions: Array(9).fill(cond()) }, /^conditions: must have at most 8 conditions$/],
      [
        "operator not valid for the field",
        { conditions: [{ field: "subject", operator: "is_true" }] },
        /^conditions\[0\]\.operator: "is_true" is only valid for has_attachment, dmarc_overridden/,
      ],
      [
        "text operator on has_attachment",
        { conditions: [{ field: "has_attachment", operator: "contains", value: "x" }] },
        /^conditions\[0\]\.operator: .*not valid for has_attachment/,
      ],
      [
        "missing value",
        { conditions: [{ field: "from", operator: "equals" }] },
        /^conditions\[0\]\.value: is required for operator "equals"$/,
      ],
      ["unknown field", { conditions: [{ field: "cc", operator: "equals", value: "a" }] }, /conditions\[0\]\.field/],
      ["endpointIds on a block rule", { endpointIds: ["ep_x"] }, /^endpointIds: only allowed when action is "route"/],
      [
        "domainId and addressId together",
        { domainId: "dom_a", addressId: "addr_b" },
        /^addressId: cannot be combined with domainId/,
      ],
      ["unknown domainId", { domainId: "dom_unknown1234567" }, /^domainId: unknown domain dom_unknown1234567$/],
      ["unknown addressId", { addressId: "addr_unknown123456" }, /^addressId: unknown address addr_unknown123456$/],
      [
        "unknown endpoint",
        { action: "route", endpointIds: ["ep_unknown12345678"] },
        /^endpointIds\[0\]: unknown endpoint ep_unknown12345678$/,
      ],
      ["body not an object", [], /^request body must be a JSON object$/],
    ])("refuses %s with 400 naming field and rule", async (_label, over, message) => {
      const acct = await stack.account();
      const body = Array.isArray(over) ? over : rule(over);
      const res = await acct.api("POST", "/api/v1/shield-rules", body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(message);
      expect(await priorities(acct)).toEqual([]);
    });

    it("treats another account's domain, address and endpoint as unknown (400)", async () => {
      const owner = await stack.account();
      const other = await stack.account();
      const { domainId, addressId } = await domainAndAddress(owner, "owner-only.example.com");
      const ep = await endpoint(owner);
      for (const [body, field] of [
        [rule({ domainId }), "domainId"],
        [rule({ addressId }), "addressId"],
        [rule({ action: "route", endpointIds: [ep] }), "endpointIds[0]"],
      ] as const) {
        const res = await other.api("POST", "/api/v1/shield-rules", body);
        expect(res.status).toBe(400);
        expect(res.body.error).toMatch(new RegExp(`^${field.replace(/[[\]]/g, "\\$&")}: unknown`));
      }
      expect(await priorities(other)).toEqual([]);
    });

    it("route: at most one webhook destination (webhook, slack and discord all count as one kind)", async () => {
      const acct = await stack.account({ plan: "scale" });
      const hook = await endpoint(acct);
      const slack = await endpoint(acct, "slack");
      const two = await acct.api("POST", "/api/v1/shield-rules", rule({ action: "route", endpointIds: [hook, slack] }));
      expect(two.status).toBe(400);
      expect(two.body.error).toMatch(/^endpointIds\[1\]: at most one webhook destination is allowed/);
      const dup = await acct.api("POST", "/api/v1/shield-rules", rule({ action: "route", endpointIds: [hook, hook] }));
      expect(dup.status).toBe(400);
      const one = await acct.api("POST", "/api/v1/shield-rules", rule({ action: "route", endpointIds: [slack] }));
      expect(one.status).toBe(201);
      expect(one.body.endpointIds).toEqual([slack]);
      const quarantine = await acct.api("POST", "/api/v1/shield-rules", rule({ action: "route" }));
      expect(quarantine.status).toBe(201);
      expect(quarantine.body.endpointIds).toEqual([]);
    });

    it("answers 402 on the free plan's 4th rule, and allows it again after a delete", async () => {
      const acct = await stack.account({ plan: "free" });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await acct.api("POST", "/api/v1/shield-rules", rule({ name: `r${i}` }));
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }
      const fourth = await acct.api("POST", "/api/v1/shield-rules", rule({ name: "r3" }));
      expect(fourth.status).toBe(402);
      expect(fourth.body.error).toMatch(/free plan allows at most 3 shield rules/);
      // The way out is named: the operator's CLI command.
      expect(fourth.body.error).toMatch(/admin accounts set-plan --account <id> --plan selfhosted\|scale/);
      expect(await stack.prisma.shieldRule.count({ where: { accountId: acct.accountId } })).toBe(3);

      expect((await acct.api("DELETE", `/api/v1/shield-rules/${ids[0]}`)).status).toBe(204);
      const again = await acct.api("POST", "/api/v1/shield-rules", rule({ name: "r3" }));
      expect(again.status).toBe(201);
      expect(again.body.priority).toBe(3);
    });

    it("the selfhosted plan has no cap: a free account moved to it creates its 4th and 5th rules", async () => {
      const acct = await stack.account({ plan: "free" });
      for (let i = 0; i < 3; i++)
        expect((await acct.api("POST", "/api/v1/shield-rules", rule({ name: `s${i}` }))).status).toBe(201);
      expect((await acct.api("POST", "/api/v1/shield-rules", rule({ name: "s3" }))).status).toBe(402);
      await stack.admin("accounts", "set-plan", "--account", acct.accountId, "--plan", "selfhosted");
      for (const name of ["s3", "s4"])
        expect((await acct.api("POST", "/api/v1/shield-rules", rule({ name }))).status).toBe(201);
      expect(await stack.prisma.shieldRule.count({ where: { accountId: acct.accountId } })).toBe(5);
    });

    it("the cap holds under concurrency: 10 parallel creates on free → exactly 3 created", async () => {
      const acct = await stack.account({ plan: "free" });
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => acct.api("POST", "/api/v1/shield-rules", rule({ name: `p${i}` }))),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 402, 402, 402, 402, 402, 402, 402]);
      expect((await priorities(acct)).map((p: [string, number]) => p[1])).toEqual([1, 2, 3]);
    });

    it("20 parallel creates on scale get unique, gap-free priorities 1..20", async () => {
      const acct = await stack.account({ plan: "scale" });
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => acct.api("POST", "/api/v1/shield-rules", rule({ name: `c${i}` }))),
      );
      expect(results.every((r) => r.status === 201)).toBe(true);
      const given = results.map((r) => r.body.priority).sort((a, b) => a - b);
      expect(given).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect((await priorities(acct)).map((p: [string, number]) => p[1])).toEqual(given);
    });

    it("a read-only key can list but not create", async () => {
      const acct = await stack.account({ scope: "read" });
      expect((await acct.api("GET", "/api/v1/shield-rules")).status).toBe(200);
      expect((await acct.api("POST", "/api/v1/shield-rules", rule())).status).toBe(403);
      expect(await stack.prisma.shieldRule.count({ where: { accountId: acct.accountId } })).toBe(0);
    });
  });

  describe("GET / PATCH / DELETE /shield-rules/{id}", () => {
    it("lists in evaluation order and hides other accounts' rules (404)", async () => {
      const acct = await stack.account();
      const other = await stack.account();
      const a = (await acct.api("POST", "/api/v1/shield-rules", rule({ name: "a" }))).body;
      const b = (await acct.api("POST", "/api/v1/shield-rules", rule({ name: "b" }))).body;
      const list = await acct.api("GET", "/api/v1/shield-rules");
      expect(list.body).toEqual({ data: [a, b] });
      expect(shieldRuleListSchema.safeParse(list.body).error).toBeUndefined();
      expect((await other.api("GET", "/api/v1/shield-rules")).body).toEqual({ data: [] });
      for (const [method, body] of [
        ["GET", undefined],
        ["PATCH", { enabled: false }],
        ["DELETE", undefined],
      ] as const) {
        const res = await other.api(method, `/api/v1/shield-rules/${a.id}`, body);
        expect(res.status).toBe(404);
      }
      expect((await acct.api("GET", `/api/v1/shield-rules/${a.id}`)).body).toEqual(a);
    });

    it("PATCH updates name, enabled, conditions and endpointIds, nothing else", async () => {
      const acct = await stack.account({ plan: "scale" });
      const ep = await endpoint(acct);
      const route = (await acct.api("POST", "/api/v1/shield-rules", rule({ action: "route" }))).body;
      const res = await acct.api("PATCH", `/api/v1/shield-rules/${route.id}`, {
        name: "renamed",
        enabled: false,
        conditions: [{ field: "has_attachment", operator: "is_true" }],
        endpointIds: [ep],
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        ...route,
        name: "renamed",
        enabled: false,
        conditions: [{ field: "has_attachment", operator: "is_true" }],
        endpointIds: [ep],
      });
      expect((await acct.api("GET", `/api/v1/shield-rules/${route.id}`)).body).toEqual(res.body);

      const block = (await acct.api("POST", "/api/v1/shield-rules", rule())).body;
      for (const [body, message] of [
        [{ endpointIds: [ep] }, /^endpointIds: only allowed when action is "route"/],
        [{ action: "allow" }, /^action: is not a field that can be updated/],
        [{ priority: 1 }, /^priority: is not a field that can be updated/],
        [{}, /at least one of name, enabled, conditions, endpointIds/],
        [{ conditions: [] }, /^conditions: must have at least 1 condition$/],
      ] as const) {
        const bad = await acct.api("PATCH", `/api/v1/shield-rules/${block.id}`, body);
        expect(bad.status).toBe(400);
        expect(bad.body.error).toMatch(message);
      }
      const foreign = await (await stack.account()).api("POST", "/api/v1/endpoints", { url: "http://127.0.0.1:9/x" });
      const bad = await acct.api("PATCH", `/api/v1/shield-rules/${route.id}`, { endpointIds: [foreign.body.id] });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatch(/^endpointIds\[0\]: unknown endpoint/);
      expect((await acct.api("GET", `/api/v1/shield-rules/${block.id}`)).body).toEqual(block);
    });

    it("DELETE answers 204 and closes the priority gap", async () => {
      const acct = await stack.account({ plan: "scale" });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await acct.api("POST", "/api/v1/shield-rules", rule())).body.id);
      const del = await acct.api("DELETE", `/api/v1/shield-rules/${ids[1]}`);
      expect(del.status).toBe(204);
      expect(await priorities(acct)).toEqual([
        [ids[0], 1],
        [ids[2], 2],
        [ids[3], 3],
        [ids[4], 4],
      ]);
      expect((await acct.api("DELETE", `/api/v1/shield-rules/${ids[1]}`)).status).toBe(404);
      // Concurrent deletes and creates still leave 1..n.
      await Promise.all([
        acct.api("DELETE", `/api/v1/shield-rules/${ids[0]}`),
        acct.api("POST", "/api/v1/shield-rules", rule()),
        acct.api("DELETE", `/api/v1/shield-rules/${ids[3]}`),
        acct.api("POST", "/api/v1/shield-rules", rule()),
      ]);
      expect((await priorities(acct)).map((p: [string, number]) => p[1])).toEqual([1, 2, 3, 4]);
    });

    it("rules removed by cascade (their domain deleted) leave no gap once the next write runs", async () => {
      const acct = await stack.account({ plan: "scale" });
      const { domainId } = await domainAndAddress(acct, "cascade.example.com");
      const first = (await acct.api("POST", "/api/v1/shield-rules", rule())).body.id;
      await acct.api("POST", "/api/v1/shield-rules", rule({ domainId }));
      const third = (await acct.api("POST", "/api/v1/shield-rules", rule())).body.id;
      await stack.prisma.domain.delete({ where: { id: domainId } });
      const fourth = await acct.api("POST", "/api/v1/shield-rules", rule());
      expect(fourth.body.priority).toBe(3);
      expect(await priorities(acct)).toEqual([
        [first, 1],
        [third, 2],
        [fourth.body.id, 3],
      ]);
    });
  });

  describe("deleting a domain or address", () => {
    it("removes its scoped rules and leaves the evaluation order gap-free", async () => {
      const acct = await stack.account({ plan: "scale" });
      const a = await domainAndAddress(acct, "gap-a.com");
      const b = await domainAndAddress(acct, "gap-b.com");
      const r1 = await acct.api("POST", "/api/v1/shield-rules", rule());
      const r2 = await acct.api("POST", "/api/v1/shield-rules", rule({ domainId: a.domainId }));
      const r3 = await acct.api("POST", "/api/v1/shield-rules", rule({ addressId: b.addressId }));
      const r4 = await acct.api("POST", "/api/v1/shield-rules", rule());
      expect([r1, r2, r3, r4].map((r) => r.status)).toEqual([201, 201, 201, 201]);
      expect((await acct.api("DELETE", `/api/v1/domains/${a.domainId}`)).status).toBe(204);
      expect(await priorities(acct)).toEqual([
        [r1.body.id, 1],
        [r3.body.id, 2],
        [r4.body.id, 3],
      ]);
      expect((await acct.api("DELETE", `/api/v1/addresses/${b.addressId}`)).status).toBe(204);
      expect(await priorities(acct)).toEqual([
        [r1.body.id, 1],
        [r4.body.id, 2],
      ]);
    });
  });

  describe("POST /shield-rules/reorder", () => {
    it("applies a full permutation and refuses anything else with 400", async () => {
      const acct = await stack.account({ plan: "scale" });
      const other = await stack.account();
      const foreign = (await other.api("POST", "/api/v1/shield-rules", rule())).body.id;
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await acct.api("POST", "/api/v1/shield-rules", rule())).body.id);
      const [a, b, c, d] = ids as [string, string, string, string];

      const res = await acct.api("POST", "/api/v1/shield-rules/reorder", { ids: [d, b, a, c] });
      expect(res.status).toBe(200);
      expect(res.body.data.map((r: { id: string; priority: number }) => [r.id, r.priority])).toEqual([
        [d, 1],
        [b, 2],
        [a, 3],
        [c, 4],
      ]);
      expect(await priorities(acct)).toEqual(res.body.data.map((r: { id: string }, i: number) => [r.id, i + 1]));

      for (const [body, message] of [
        [{ ids: [d, b, a] }, new RegExp(`^ids: must list every shield rule .*missing ${c}`)],
        [{ ids: [d, b, a, c, a] }, /^ids\[4\]: .* is listed twice$/],
        [{ ids: [d, b, a, foreign] }, new RegExp(`^ids\\[3\\]: unknown shield rule ${foreign}$`)],
        [{ ids: "nope" }, /^ids: must be an array of shield rule ids$/],
        [{}, /^ids: is required$/],
      ] as const) {
        const bad = await acct.api("POST", "/api/v1/shield-rules/reorder", body);
        expect(bad.status).toBe(400);
        expect(bad.body.error).toMatch(message);
      }
      expect(await priorities(acct)).toEqual([
        [d, 1],
        [b, 2],
        [a, 3],
        [c, 4],
      ]);
    });

    it("every shield-rule route is in the OpenAPI document", async () => {
      const res = await fetch(`${stack.apiUrl}/api/v1/openapi.json`);
      const doc = (await res.json()) as { paths: Record<string, Record<string, { summary: string }>> };
      const ops = [
        ["/shield-rules", "post"],
        ["/shield-rules", "get"],
        ["/shield-rules/reorder", "post"],
        ["/shield-rules/test", "post"],
        ["/shield-rules/{id}", "get"],
        ["/shield-rules/{id}", "patch"],
        ["/shield-rules/{id}", "delete"],
        ["/blocks", "get"],
      ] as const;
      for (const [path, method] of ops) {
        const op = doc.paths[path]?.[method] ?? doc.paths[`/api/v1${path}`]?.[method];
        expect(op?.summary).toBeDefined();
        expect(op?.summary).not.toBe("Undocumented route");
      }
    });

    it("an account without rules reorders the empty list", async () => {
      const acct = await stack.account();
      const res = await acct.api("POST", "/api/v1/shield-rules/reorder", { ids: [] });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [] });
    });
  });
});
