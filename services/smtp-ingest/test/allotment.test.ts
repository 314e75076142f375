import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { monthKey } from "@mailroom/core";
import { monthlyReceived } from "@mailroom/db";
import { type Ingest, type IngestEnv, ingestEnv } from "@mailroom/stack";
import { type Seeded, seedAddress, seedDomain, simpleMessage } from "@mailroom/testing";
import { USAGE_SHARDS } from "../src/usage.ts";
import { type RawSession, rawSession as session } from "./raw-session.ts";

/**
 * The monthly allotment is exact under concurrency (issue 13): the usage count lives in escrow
 * shards, and sessions that all passed RCPT while there was room race at DATA. Exactly the room
 * left is accepted; the rest get 452 4.2.2 and leave nothing behind.
 */
describe("monthly allotment at its edge, concurrent sessions", () => {
  let t: IngestEnv;
  let ingest: Ingest;
  const month = monthKey(new Date());

  beforeAll(async () => {
    t = await ingestEnv();
    ingest = await t.start({ maxConnections: 100, maxConnectionsPerIp: 100 });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** `n` sessions that each had MAIL and RCPT accepted (so all saw room), then DATA at once. */
  async function raceAtData(port: number, n: number, rcpts: string[]): Promise<string[]> {
    const sessions: RawSession[] = [];
    for (let i = 0; i < n; i++) {
      const s = await session(port);
      expect(await s.cmd("MAIL FROM:<a@sender.example>\r\n")).toMatch(/^250 /);
      for (const to of rcpts) expect(await s.cmd(`RCPT TO:<${to}>\r\n`)).toMatch(/^250 /);
      expect(await s.cmd("DATA\r\n")).toMatch(/^354 /);
      sessions.push(s);
    }
    const body = simpleMessage("a@sender.example", rcpts[0] as string).toString();
    const replies = await Promise.all(sessions.map((s) => s.cmd(`${body}\r\n.\r\n`)));
    for (const s of sessions) s.close();
    return replies;
  }

  const accepted = (replies: string[]) => replies.filter((r) => r.startsWith("250 ")).length;
  const spooledFor = (accountId: string) => t.prisma.spoolRecipient.count({ where: { accountId } });

  it("settling from nothing: 30 sessions, room for 10 — exactly 10 accepted, counted and spooled", async () => {
    const d = await seedDomain(t.prisma, "edge.example", { plan: "free" });
    await seedAddress(t.prisma, d, "info");
    await t.prisma.usageCounter.create({ data: { accountId: d.accountId, month, received: 2_990 } });

    const replies = await raceAtData(ingest.port, 30, ["info@edge.example"]);

    expect(accepted(replies)).toBe(10);
    for (const r of replies.filter((x) => !x.startsWith("250 "))) expect(r).toMatch(/^452 4\.2\.2 /);
    expect(await monthlyReceived(t.prisma, d.accountId, month)).toBe(3_000);
    expect(await spooledFor(d.accountId)).toBe(10);
    // Full now: RCPT itself refuses.
    const s = await session(ingest.port);
    await s.cmd("MAIL FROM:<a@sender.example>\r\n");
    expect(await s.cmd("RCPT TO:<info@edge.example>\r\n")).toMatch(/^452 4\.2\.2 /);
    s.close();
  });

  it("on the shards' fast path: caps left by an earlier settlement hand out exactly the room", async () => {
    const d = await seedDomain(t.prisma, "shards.example", { plan: "free" });
    await seedAddress(t.prisma, d, "info");
    // As a settlement leaves them: 2,988 counted, room for 12 spread as caps over the shards.
    await t.prisma.usageShard.createMany({
      data: Array.from({ length: USAGE_SHARDS }, (_, shard) => {
        const received = shard === 0 ? 2_988 : 0;
        return {
          accountId: d.accountId,
          month,
          shard,
          received,
          cap: received + (shard < 12 ? 1 : 0),
          allotment: 3_000,
        };
      }),
    });

    const replies = await raceAtData(ingest.port, 25, ["info@shards.example"]);

    expect(accepted(replies)).toBe(12);
    expect(await monthlyReceived(t.prisma, d.accountId, month)).toBe(3_000);
    expect(await spooledFor(d.accountId)).toBe(12);
  });

  it("a message for two accounts, one of them out of room: 452 for the message, nothing counted for either", async () => {
    const full = await seedDomain(t.prisma, "nearly.example", { plan: "free" });
    await seedAddress(t.prisma, full, "info");
    await t.prisma.usageCounter.create({ data: { accountId: full.accountId, month, received: 2_999 } });
    const roomy = await seedDomain(t.prisma, "roomy.example", { plan: "free" });
    await seedAddress(t.prisma, roomy, "info");

    // Two sessions pass RCPT for both; only one can have the last unit of nearly.example.
    const replies = await raceAtData(ingest.port, 2, ["info@nearly.example", "info@roomy.example"]);

    expect(accepted(replies)).toBe(1);
    expect(replies.find((r) => !r.startsWith("250 "))).toMatch(/^452 4\.2\.2 /);
    expect(await monthlyReceived(t.prisma, full.accountId, month)).toBe(3_000);
    expect(await monthlyReceived(t.prisma, roomy.accountId, month)).toBe(1);
    expect(await spooledFor(roomy.accountId)).toBe(1);
  });

  it("a plan change re-sets the caps: a full free account upgraded to scale accepts again", async () => {
    const d: Seeded = await seedDomain(t.prisma, "upgrade.example", { plan: "free" });
    await seedAddress(t.prisma, d, "info");
    await t.prisma.usageCounter.create({ data: { accountId: d.accountId, month, received: 2_999 } });
    expect(accepted(await raceAtData(ingest.port, 3, ["info@upgrade.example"]))).toBe(1);

    await t.prisma.account.update({ where: { id: d.accountId }, data: { plan: "scale" } });
    expect(accepted(await raceAtData(ingest.port, 3, ["info@upgrade.example"]))).toBe(3);
    expect(await monthlyReceived(t.prisma, d.accountId, month)).toBe(3_003);
    const shards = await t.prisma.usageShard.findMany({ where: { accountId: d.accountId, month } });
    expect(new Set(shards.map((s) => s.allotment))).toEqual(new Set([1_000_000]));
    expect(shards.reduce((n, s) => n + s.cap, 0)).toBe(1_000_000 - 2_999);
  });
});
