import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId } from "@mailroom/db";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { pageOf } from "../src/lib/schemas.ts";
import { blockSchema } from "../src/routes/shield-schemas.ts";

/**
 * GET /blocks: keyset pagination, newest first. The rows are inserted as the rule engine writes them
 * (e2e/shield-actions.test.ts covers the engine writing them from real SMTP).
 */
describe("GET /blocks", () => {
  let stack: Stack;
  let acct: TestAccount;
  let other: TestAccount;
  const ruleA = "gr_ruleAAAAAAAAAAAAAAAAAA";
  const ruleB = "gr_ruleBBBBBBBBBBBBBBBBBB";
  let expected: string[] = [];

  beforeAll(async () => {
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
    other = await stack.account();
    const base = Date.parse("2026-03-01T10:00:00.000Z");
    const rows = Array.from({ length: 7 }, (_, i) => ({
      id: newId("block"),
      accountId: acct.accountId,
      ruleId: i % 2 === 0 ? ruleA : ruleB,
      ruleName: i % 2 === 0 ? "A" : "B",
      sender: `s${i}@spam.example`,
      recipient: "support@example.com",
      subject: `subject ${i}`,
      // Pairs share a received time (one message, two recipients): the id breaks the tie.
      receivedAt: new Date(base + Math.floor(i / 2) * 1000),
    }));
    await stack.prisma.blockRecord.createMany({ data: rows });
    await stack.prisma.blockRecord.create({
      data: { ...rows[0]!, id: newId("block"), accountId: other.accountId, subject: "other account" },
    });
    expected = [...rows]
      .sort((x, y) => y.receivedAt.getTime() - x.receivedAt.getTime() || (y.id < x.id ? -1 : 1))
      .map((r) => r.id);
  });
  afterAll(async () => {
    await stack?.close();
  });

  const all = async (query: string) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const res: { status: number; body: any } = await acct.api(
        "GET",
        `/api/v1/blocks?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      expect(res.status).toBe(200);
      expect(pageOf(blockSchema).safeParse(res.body).error).toBeUndefined();
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((b: { id: string }) => b.id));
      cursor = res.body.nextCursor;
      if (!cursor) return seen;
    }
    throw new Error("pagination did not end");
  };

  it("pages newest first, id descending within one received time, with nothing repeated or lost", async () => {
    expect(await all("limit=2")).toEqual(expected);
  });

  it("lists the fields of a block record and only the caller's", async () => {
    const res = await acct.api("GET", "/api/v1/blocks");
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.data).toHaveLength(7);
    expect(res.body.data[0]).toEqual({
      id: expected[0],
      ruleId: ruleA,
      ruleName: "A",
      sender: "s6@spam.example",
      recipient: "support@example.com",
      subject: "subject 6",
      receivedAt: "2026-03-01T10:00:03.000Z",
    });
    const theirs = await other.api("GET", "/api/v1/blocks");
    expect(theirs.body.data.map((b: { subject: string }) => b.subject)).toEqual(["other account"]);
  });

  it("filters by rule, also across pages", async () => {
    const byB = await all(`limit=2&ruleId=${ruleB}`);
    expect(byB).toHaveLength(3);
    expect(byB).toEqual(expected.filter((id) => byB.includes(id)));
    const rows = await stack.prisma.blockRecord.findMany({ where: { id: { in: byB } } });
    expect(rows.every((r) => r.ruleId === ruleB)).toBe(true);
  });

  it.each([
    ["cursor=garbage", "Invalid cursor"],
    ["cursor=", "Invalid cursor"],
    ["limit=0", "limit: must be a whole number from 1 to 100"],
    ["limit=101", "limit: must be a whole number from 1 to 100"],
    ["limit=abc", "limit: must be a whole number from 1 to 100"],
    ["ruleId=a&ruleId=b", "ruleId: must be given once, as a string"],
  ])("?%s → 400 %s", async (query, error) => {
    const res = await acct.api("GET", `/api/v1/blocks?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error });
  });

  it("a tampered cursor is refused", async () => {
    const first = await acct.api("GET", "/api/v1/blocks?limit=1");
    const c: string = first.body.nextCursor;
    const tampered = c.slice(0, -2) + (c.endsWith("A") ? "BB" : "AA");
    const res = await acct.api("GET", `/api/v1/blocks?cursor=${tampered}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "Invalid cursor" });
  });
});
