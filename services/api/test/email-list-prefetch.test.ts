import { afterEach, describe, expect, it } from "@jest/globals";
import { poolOf } from "@mailroom/db";
import { API_ONLY, type Stack, type TestAccount, useStack } from "@mailroom/stack";
import { seedEmail } from "@mailroom/testing";

const V = "/api/v1";

/**
 * `GET /emails` starts its page beside the API key check (auth.ts Prefetch): the two Postgres reads
 * overlap. What must hold: the page is scoped to the key's own account, a revoked or unknown key
 * gets 401 and nothing else (not even a 400 for a bad query string), and the order of the reads is
 * overlapped, not one after the other.
 */
describe("GET /emails: the key check and the page overlap", () => {
  let stack: Stack;
  let acct: TestAccount;
  useStack(API_ONLY, (s, a) => {
    [stack, acct] = [s, a];
  });
  let restore: (() => void) | undefined;
  afterEach(() => restore?.());

  /** Every statement the API's pool runs from now: when it was sent and when it was answered, in order. */
  const recordStatements = () => {
    const pool = poolOf(stack.prisma);
    const original = pool.query;
    const events: string[] = [];
    const label = (args: unknown[]) => {
      const q = args[0] as string | { name?: string; text: string };
      const text = typeof q === "string" ? q : (q.name ?? q.text);
      if (text.includes("api-key-by-hash")) return "key";
      if (/FROM "emails"/.test(text)) return "page";
      return "other";
    };
    pool.query = ((...args: unknown[]) => {
      const what = label(args);
      events.push(`${what} sent`);
      const r = (original as (...a: unknown[]) => Promise<unknown>).apply(pool, args);
      return r.then(
        (v) => {
          events.push(`${what} answered`);
          return v;
        },
        (e) => {
          events.push(`${what} answered`);
          throw e;
        },
      );
    }) as typeof pool.query;
    restore = () => {
      pool.query = original;
    };
    return events;
  };

  it("the page is sent before the key check is answered, and is the key's account's page", async () => {
    const mine = await seedEmail(stack.prisma, acct.accountId, { subject: "mine" });
    const other = await stack.account();
    await seedEmail(stack.prisma, other.accountId, { subject: "theirs" });
    const events = recordStatements();
    const r = await acct.api("GET", `${V}/emails?limit=10`);
    expect(r.status).toBe(200);
    expect(r.body.data.map((e: { id: string }) => e.id)).toEqual([mine.id]);
    const keyAnswered = events.indexOf("key answered");
    expect(events.indexOf("page sent")).toBeGreaterThanOrEqual(0);
    expect(events.indexOf("page sent")).toBeLessThan(keyAnswered);
    // One page read, no second one after the key check.
    expect(events.filter((e) => e === "page sent")).toHaveLength(1);
  });

  it("a filtered list waits for the key, so its statement is planned for the account", async () => {
    const a = await stack.account();
    const wanted = await seedEmail(stack.prisma, a.accountId, { fromAddress: "rare@vip.example" });
    await seedEmail(stack.prisma, a.accountId, { fromAddress: "bulk@news.example" });
    const events = recordStatements();
    const r = await a.api("GET", `${V}/emails?from=rare%40vip`);
    expect(r.status).toBe(200);
    expect(r.body.data.map((e: { id: string }) => e.id)).toEqual([wanted.id]);
    expect(events.indexOf("page sent")).toBeGreaterThan(events.indexOf("key answered"));
  });

  it("a revoked key gets 401, and a bad query string with a bad key is 401, with a good key 400", async () => {
    const a = await stack.account();
    await seedEmail(stack.prisma, a.accountId, { subject: "kept" });
    expect((await a.api("GET", `${V}/emails?limit=nope`)).status).toBe(400);
    await stack.prisma.apiKey.updateMany({ where: { accountId: a.accountId }, data: { revokedAt: new Date() } });
    const revoked = await a.api("GET", `${V}/emails`);
    expect(revoked.status).toBe(401);
    expect(revoked.body).toEqual({ error: "Invalid or revoked API key" });
    expect(revoked.body.data).toBeUndefined();
    const bad = await a.api("GET", `${V}/emails?limit=nope`);
    expect(bad.status).toBe(401);
    const unknown = await fetch(`${stack.apiUrl}${V}/emails?limit=nope`, {
      headers: { authorization: `Bearer svc_${"x".repeat(43)}` },
    });
    expect(unknown.status).toBe(401);
  });

  it("filters, cursors and a read-only key go through the same path", async () => {
    const a = await stack.account({ scope: "read" });
    for (let i = 0; i < 5; i++) await seedEmail(stack.prisma, a.accountId, { subject: `n${i}` });
    const first = await a.api("GET", `${V}/emails?limit=3`);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(3);
    const second = await a.api("GET", `${V}/emails?limit=3&cursor=${first.body.nextCursor}`);
    expect(second.status).toBe(200);
    expect(second.body.data).toHaveLength(2);
    expect(second.body.nextCursor).toBeNull();
  });
});
