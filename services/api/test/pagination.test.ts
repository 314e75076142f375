import { beforeAll, describe, expect, it } from "@jest/globals";
import { createCursorCodec, Prisma } from "@mailroom/db";
import { API_ONLY, type Stack, type TestAccount, useStack } from "@mailroom/stack";
import { seedEmail } from "@mailroom/testing";
import { EMAIL_SEARCH_DOCUMENT, EMAIL_SEARCH_INDEX } from "../src/ops/email-search.ts";
import { emailListSql, listEmailsQuery } from "../src/ops/emails.ts";

const V = "/api/v1";

async function walk(acct: TestAccount, path: string, limit: number, onPage?: (n: number) => Promise<void>) {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const r = await acct.api("GET", `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(r.status).toBe(200);
    expect(r.body.data.length).toBeLessThanOrEqual(limit);
    ids.push(...r.body.data.map((x: { id: string }) => x.id));
    cursor = r.body.nextCursor;
    pages++;
    if (onPage) await onPage(pages);
  } while (cursor);
  return { ids, pages };
}

describe("pagination, filters and search", () => {
  let stack: Stack;
  let acct: TestAccount;
  useStack(API_ONLY, (s, a) => {
    [stack, acct] = [s, a];
  });

  it("walks a few hundred emails newest first while others arrive: no duplicates, no gaps", async () => {
    const a = await stack.account();
    const base = Date.UTC(2026, 0, 1);
    // 300 emails over 100 distinct milliseconds: ties on receivedAt are broken by id.
    const existing: { id: string; at: number }[] = [];
    for (let i = 0; i < 300; i += 30) {
      const batch = await Promise.all(
        Array.from({ length: 30 }, (_, j) => {
          const at = base + ((i + j) % 100) * 1000;
          return seedEmail(stack.prisma, a.accountId, { receivedAt: new Date(at) }).then((e) => ({ id: e.id, at }));
        }),
      );
      existing.push(...batch);
    }
    let inserted = 0;
    const { ids, pages } = await walk(a, `${V}/emails`, 23, async () => {
      // Between pages: mail arriving now, and mail stamped inside the range already walked/unwalked.
      await Promise.all([
        seedEmail(stack.prisma, a.accountId, { receivedAt: new Date() }),
        seedEmail(stack.prisma, a.accountId, { receivedAt: new Date(base + Math.floor(Math.random() * 100) * 1000) }),
      ]);
      inserted += 2;
    });
    expect(pages).toBeGreaterThanOrEqual(14);
    expect(new Set(ids).size).toBe(ids.length);
    const seen = new Set(ids);
    expect(existing.filter((e) => !seen.has(e.id))).toEqual([]);
    expect(inserted).toBeGreaterThan(0);
    // Newest first, ties by id descending, exactly as the database orders them.
    const rows = await stack.prisma.email.findMany({
      where: { id: { in: ids } },
      orderBy: [{ receivedAt: "desc" }, { id: "desc" }],
      select: { id: true },
    });
    expect(ids).toEqual(rows.map((r) => r.id));
  });

  it("nextCursor is non-null exactly when more results exist", async () => {
    const a = await stack.account();
    for (let i = 0; i < 10; i++)
      await seedEmail(stack.prisma, a.accountId, { receivedAt: new Date(Date.UTC(2026, 1, 1, 0, 0, i)) });
    const p1 = await a.api("GET", `${V}/emails?limit=5`);
    expect(p1.body.data).toHaveLength(5);
    expect(p1.body.nextCursor).toEqual(expect.any(String));
    const p2 = await a.api("GET", `${V}/emails?limit=5&cursor=${p1.body.nextCursor}`);
    expect(p2.body.data).toHaveLength(5);
    expect(p2.body.nextCursor).toBeNull();
    expect((await a.api("GET", `${V}/emails?limit=10`)).body.nextCursor).toBeNull();
    expect((await a.api("GET", `${V}/emails?limit=9`)).body.nextCursor).not.toBeNull();
    const dflt = await a.api("GET", `${V}/emails`);
    expect(dflt.body.data).toHaveLength(10);
    const empty = await (await stack.account()).api("GET", `${V}/emails`);
    expect(empty.body).toEqual({ data: [], nextCursor: null });
  });

  it("default limit 50, maximum 100", async () => {
    const a = await stack.account();
    await Promise.all(Array.from({ length: 120 }, () => seedEmail(stack.prisma, a.accountId)));
    expect((await a.api("GET", `${V}/emails`)).body.data).toHaveLength(50);
    expect((await a.api("GET", `${V}/emails?limit=100`)).body.data).toHaveLength(100);
    expect((await a.api("GET", `${V}/emails?limit=1`)).body.data).toHaveLength(1);
  });

  it.each(["/emails", "/threads", "/domains", "/addresses", "/endpoints"])(
    "%s: limit outside 1..100 and bad cursors are 400",
    async (path) => {
      for (const limit of ["0", "101", "-1", "abc", "1.5", ""]) {
        const r = await acct.api("GET", `${V}${path}?limit=${limit}`);
        expect([limit, r.status, r.body]).toEqual([
          limit,
          400,
          { error: "limit: must be a whole number from 1 to 100" },
        ]);
      }
      const good = createCursorCodec("test-cursor-secret").encode({ at: new Date(), id: "em_abcdefghijklmnop" });
      const forged = createCursorCodec("another-secret").encode({ at: new Date(), id: "em_abcdefghijklmnop" });
      const tampered = `${good.slice(0, -2)}${good.endsWith("A") ? "B" : "A"}${good.slice(-1)}`;
      for (const cursor of ["", "garbage", "!!!", forged, tampered, Buffer.from("1.em_x.y").toString("base64url")]) {
        const r = await acct.api("GET", `${V}${path}?cursor=${encodeURIComponent(cursor)}`);
        expect([cursor, r.status, r.body]).toEqual([cursor, 400, { error: "Invalid cursor" }]);
      }
      expect((await acct.api("GET", `${V}${path}?cursor=${good}`)).status).toBe(200);
      expect((await acct.api("GET", `${V}${path}?cursor=a&cursor=b`)).body).toEqual({
        error: "cursor: must be a single string",
      });
      const unknown = await acct.api("GET", `${V}${path}?sort=asc`);
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toMatch(/^query: Unrecognized key: "sort"/);
    },
  );

  it("pages domains, addresses, endpoints and threads without duplicates or gaps", async () => {
    const a = await stack.account();
    const doms: string[] = [];
    for (let i = 0; i < 7; i++)
      doms.push((await a.api("POST", `${V}/domains`, { domain: `p${i}.walk.example.com` })).body.id);
    const addrs: string[] = [];
    for (let i = 0; i < 7; i++) {
      addrs.push((await a.api("POST", `${V}/addresses`, { domainId: doms[0], localPart: `u${i}` })).body.id);
    }
    const eps: string[] = [];
    for (let i = 0; i < 7; i++)
      eps.push((await a.api("POST", `${V}/endpoints`, { url: "http://127.0.0.1:9/" })).body.id);
    const threads = new Set<string>();
    for (let i = 0; i < 7; i++) {
      threads.add(
        (await seedEmail(stack.prisma, a.accountId, { receivedAt: new Date(Date.UTC(2026, 2, 1, i)) })).threadId,
      );
    }
    for (const [path, expected] of [
      ["/domains", doms],
      ["/addresses", addrs],
      ["/endpoints", eps],
      ["/threads", [...threads]],
    ] as const) {
      const { ids, pages } = await walk(a, `${V}${path}`, 3);
      expect([path, pages]).toEqual([path, 3]);
      expect([path, [...ids].sort()]).toEqual([path, [...expected].sort()]);
      expect([path, ids]).toEqual([path, [...expected].reverse()]);
    }
  });

  describe("GET /emails filters", () => {
    let f: TestAccount;
    const ids: Record<string, string> = {};
    let threadId: string;
    let domainId: string;
    let addressId: string;
    beforeAll(async () => {
      f = await stack.account();
      domainId = (await f.api("POST", `${V}/domains`, { domain: "filters.example.com" })).body.id;
      addressId = (await f.api("POST", `${V}/addresses`, { domainId, localPart: "in" })).body.id;
      const t = await seedEmail(stack.prisma, f.accountId, {
        subject: "Invoice 2026-001 overdue",
        fromAddress: "billing@acme-supplies.example",
        fromName: "Acme Billing",
        textBody: "Please pay the attached invoice by Friday.",
        receivedAt: new Date("2026-03-01T10:00:00.000Z"),
        domainId,
        addressId,
      });
      ids.invoice = t.id;
      threadId = t.threadId;
      ids.reply = (
        await seedEmail(stack.prisma, f.accountId, {
          threadId,
          direction: "outbound",
          subject: "Re: Invoice 2026-001 overdue",
          fromAddress: "in@filters.example.com",
          textBody: "Paid yesterday, see the remittance.",
          receivedAt: new Date("2026-03-02T10:00:00.000Z"),
          domainId,
        })
      ).id;
      ids.newsletter = (
        await seedEmail(stack.prisma, f.accountId, {
          subject: "Weekly digest",
          fromAddress: "news@letters.example",
          textBody: "Kubernetes tips and the quarterly report summary.",
          receivedAt: new Date("2026-03-03T10:00:00.000Z"),
        })
      ).id;
    });
    const q = async (query: string) => {
      const r = await f.api("GET", `${V}/emails?${query}`);
      expect([query, r.status]).toEqual([query, 200]);
      return r.body.data.map((e: { id: string }) => e.id);
    };

    it("threadId, domainId, addressId, direction, from, receivedAfter/Before", async () => {
      expect(await q(`threadId=${threadId}`)).toEqual([ids.reply, ids.invoice]);
      expect(await q(`domainId=${domainId}`)).toEqual([ids.reply, ids.invoice]);
      expect(await q(`addressId=${addressId}`)).toEqual([ids.invoice]);
      expect(await q("direction=outbound")).toEqual([ids.reply]);
      expect(await q("direction=inbound")).toEqual([ids.newsletter, ids.invoice]);
      expect(await q("from=ACME-SUPPLIES")).toEqual([ids.invoice]);
      expect(await q("from=%25")).toEqual([]); // a literal %, not a wildcard
      expect(await q("receivedAfter=2026-03-01T10:00:00.000Z")).toEqual([ids.newsletter, ids.reply]);
      expect(await q("receivedBefore=2026-03-02T10:00:00Z")).toEqual([ids.invoice]);
      expect(await q("receivedAfter=2026-03-01T12:00:00%2B02:00&receivedBefore=2026-03-03T00:00:00Z")).toEqual([
        ids.reply,
      ]);
      expect(await q(`direction=inbound&domainId=${domainId}`)).toEqual([ids.invoice]);
      // Another account's ids filter to nothing.
      expect(await (await stack.account()).api("GET", `${V}/emails?threadId=${threadId}`)).toMatchObject({
        body: { data: [], nextCursor: null },
      });
    });

    it("q: full-text over subject, sender and body", async () => {
      expect(await q("q=invoice")).toEqual([ids.reply, ids.invoice]);
      expect(await q("q=INVOICE%20friday")).toEqual([ids.invoice]);
      expect(await q("q=billing")).toEqual([ids.invoice]); // sender local part and name
      expect(await q("q=acme-supplies.example")).toEqual([ids.invoice]); // sender domain
      expect(await q("q=news%40letters.example")).toEqual([ids.newsletter]); // full address
      expect(await q("q=kubernetes")).toEqual([ids.newsletter]); // body
      expect(await q("q=%22quarterly%20report%22")).toEqual([ids.newsletter]); // phrase
      expect(await q("q=invoice%20-paid")).toEqual([ids.invoice]); // negation
      expect(await q("q=nothing-like-this")).toEqual([]);
      expect(await q("q=invoice&direction=inbound")).toEqual([ids.invoice]);
    });

    it("the search is served by the GIN index", async () => {
      const plan = await stack.prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe("SET LOCAL enable_seqscan = off");
        return tx.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(
          `EXPLAIN SELECT id FROM emails WHERE ${EMAIL_SEARCH_DOCUMENT} @@ websearch_to_tsquery('simple'::regconfig, 'invoice')`,
        );
      });
      expect(plan.map((r) => r["QUERY PLAN"]).join("\n")).toContain(EMAIL_SEARCH_INDEX);
    });

    // Plans on a tiny table prefer a sequential scan; switching those off asks whether the index
    // *can* serve the statement, which is what a large table needs.
    const explain = (sql: Prisma.Sql, off = ["enable_seqscan"]) =>
      stack.prisma.$transaction(async (tx) => {
        for (const setting of off) await tx.$executeRawUnsafe(`SET LOCAL ${setting} = off`);
        const rows = await tx.$queryRaw<{ "QUERY PLAN": string }[]>(Prisma.sql`EXPLAIN ${sql}`);
        return rows.map((r) => r["QUERY PLAN"]).join("\n");
      });
    const listQuery = (query: Record<string, string>) => listEmailsQuery.parse({ limit: "50", ...query });

    it("from= is served by the trigram index", async () => {
      // The filter as the list query writes it (ILIKE '%…%'); on a tiny table the planner would rather
      // scan, so only whether the index can serve it is asked, as for the full-text index above.
      const sql = emailListSql(f.accountId, listQuery({ from: "acme-supplies" }), null);
      const filter = sql.values.find((v) => typeof v === "string" && v.startsWith("%"));
      expect(filter).toBe("%acme-supplies%");
      const plan = await explain(Prisma.sql`SELECT id FROM emails WHERE "fromAddress" ILIKE ${filter}`);
      expect(plan).toContain("emails_from_trgm_idx");
    });

    it("a page by cursor is one index range scan in list order, the cursor in its condition, no sort", async () => {
      const at = new Date("2026-03-02T10:00:00.000Z");
      const plan = await explain(emailListSql(f.accountId, listQuery({}), { at, id: ids.reply as string }), [
        "enable_seqscan",
        "enable_sort",
      ]);
      expect(plan).toMatch(/Index Scan using "?emails_accountId_receivedAt_id_idx"?/);
      expect(plan).toMatch(/Index Cond: .*"receivedAt", id\) < /);
      expect(plan).not.toMatch(/\bSort\b/);
    });

    it.each([
      ["direction=sideways", "direction: must be inbound or outbound"],
      ["receivedAfter=yesterday", "receivedAfter: must be an ISO 8601 timestamp, e.g. 2026-01-31T12:00:00Z"],
      [
        "receivedBefore=2026-13-01T00:00:00Z",
        "receivedBefore: must be an ISO 8601 timestamp, e.g. 2026-01-31T12:00:00Z",
      ],
      ["q=", "q: must not be empty"],
      [`q=${"x".repeat(201)}`, "q: must be at most 200 characters"],
      ["from=a&from=b", "from: must be a single string"],
      ["threadId=", "threadId: must not be empty"],
    ])("400 for %s", async (query, error) => {
      const r = await f.api("GET", `${V}/emails?${query}`);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error });
    });
  });
});
