import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { monthKey } from "@mailroom/core";
import { poolOf, type Queryable } from "@mailroom/db";
import { type IngestEnv, ingestEnv } from "@mailroom/stack";
import { seedAddress, seedDomain } from "@mailroom/testing";
import { lookupInBatches } from "../src/rcpt-lookup.ts";
import { decideRecipient } from "../src/recipients.ts";

/**
 * RCPT lookups asked while one is in flight go together in one query (rcpt-lookup.ts). Asked in the
 * same tick, the first runs alone and the rest wait for it, so the grouping here is certain. Each
 * decision must be the one the single-recipient query gives.
 */
describe("RCPT lookups grouped into one query", () => {
  let t: IngestEnv;
  const rcpts = [
    "info@grouped.example",
    "Info+news@grouped.example",
    "off@grouped.example",
    "nobody@grouped.example",
    "postmaster@grouped.example",
    "anyone@catchall.example",
    "info@unverified.example",
    "info@unknown.example",
    "sales@full.example",
  ];

  beforeAll(async () => {
    t = await ingestEnv();
    const d = await seedDomain(t.prisma, "grouped.example");
    await seedAddress(t.prisma, d, "info");
    await seedAddress(t.prisma, d, "off", { active: false });
    await seedDomain(t.prisma, "catchall.example", { catchAll: true });
    await seedAddress(t.prisma, await seedDomain(t.prisma, "unverified.example", { status: "pending" }), "info");
    const full = await seedDomain(t.prisma, "full.example", { plan: "free" });
    await seedAddress(t.prisma, full, "sales");
    await t.prisma.usageCounter.create({
      data: { accountId: full.accountId, month: monthKey(new Date()), received: 3_000 },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("nine recipients at once: two queries, and each decision as the one-recipient query makes it", async () => {
    const pool = poolOf(t.prisma);
    let queries = 0;
    const counted: Queryable = {
      query: ((...args: Parameters<typeof pool.query>) => {
        queries += 1;
        return pool.query(...args);
      }) as typeof pool.query,
    };
    const grouped = lookupInBatches(counted);
    const together = await Promise.all(rcpts.map((r) => decideRecipient(grouped, r)));
    expect(queries).toBe(2);

    const alone = [];
    for (const r of rcpts) alone.push(await decideRecipient(lookupInBatches(pool), r));
    expect(together).toEqual(alone);
    expect(together.map((d) => (d.ok ? 250 : d.code))).toEqual([250, 250, 550, 550, 250, 250, 550, 550, 452]);
    expect(together[1]).toMatchObject({ ok: true, route: { recipient: "info+news@grouped.example" } });
    expect(together[2]).toMatchObject({ ok: false, enhanced: "5.2.1" });
  });

  it("a failed query fails every lookup of its batch, and the next batch runs", async () => {
    const pool = poolOf(t.prisma);
    let calls = 0;
    const failingOnce: Queryable = {
      query: ((...args: Parameters<typeof pool.query>) => {
        calls += 1;
        // The second call is the grouped one: point it at a table that does not exist.
        if (calls === 2) return pool.query("SELECT * FROM no_such_table");
        return pool.query(...args);
      }) as typeof pool.query,
    };
    const lookup = lookupInBatches(failingOnce);
    const first = await Promise.allSettled(rcpts.slice(0, 4).map((r) => decideRecipient(lookup, r)));
    expect(first.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "rejected"]);
    const after = await decideRecipient(lookup, "info@grouped.example");
    expect(after.ok).toBe(true);
  });
});
