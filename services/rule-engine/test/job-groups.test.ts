import { describe, expect, it } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import { poisonMessage, seedAddress, seedDomain, simpleMessage, waitFor } from "@mailroom/testing";
import { sweepPendingRecipients } from "../src/sweeper.ts";
import { useQueuedPipeline } from "./driven.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

/**
 * One `inbound` job per account and accept group (the ingest's jobGroups): the job's id is its
 * first recipient's, every recipient of the group carries it as `jobId`, and the rule engine
 * processes them all in that one job, each with its own processing budget. Against the real ingest,
 * Redis and worker.
 */
describe("inbound jobs that carry a group of recipients", () => {
  const t = useQueuedPipeline(async (p) => {
    const a = await seedDomain(p.prisma, "group-a.example");
    const b = await seedDomain(p.prisma, "group-b.example");
    for (const local of ["in", "sales", "help"]) await seedAddress(p.prisma, a, local);
    await seedAddress(p.prisma, b, "in");
    return { a };
  });
  const rowsOf = (spoolId: string) =>
    t.p.prisma.spoolRecipient.findMany({ where: { spoolId }, orderBy: { id: "asc" } });

  it("a message to three recipients of one account and one of another: two jobs, every recipient stored", async () => {
    const { p } = t;
    const to = ["in@group-a.example", "sales@group-a.example", "in@group-b.example", "help@group-a.example"];
    const r = await p.sendRaw("x@o.example", to, simpleMessage("x@o.example", to[0]!, "grouped"));
    expect(r.response).toMatch(/^250 /);
    const rows = await rowsOf(r.spoolId!);
    const ofA = rows.filter((x) => x.accountId === t.seeded.a.accountId);
    expect(new Set(ofA.map((x) => x.jobId)).size).toBe(1);
    const groups = [...new Set(rows.map((x) => x.jobId as string))];
    expect(groups).toHaveLength(2);
    await waitFor(async () => (await Promise.all(groups.map((g) => p.queue.getJob(g)))).every(Boolean), {
      what: "both jobs queued",
    });
    expect(await p.queue.getJobCountByTypes("waiting", "prioritized")).toBe(2);

    // Lost (Redis restarted empty): the sweeper queues each group's job once, not one per recipient.
    for (const g of groups) await (await p.queue.getJob(g))?.remove();
    expect(await sweepPendingRecipients(p.prisma, p.queue, logger, { olderThanMs: 0 })).toBe(4);
    expect(await p.queue.getJobCountByTypes("waiting", "prioritized")).toBe(2);

    t.startEngine({ concurrency: 2 });
    const done = await p.processed(r.spoolId!);
    expect(done.map((x) => x.status)).toEqual(["stored", "stored", "stored", "stored"]);
    expect(await p.prisma.email.count({ where: { spoolId: r.spoolId! } })).toBe(4);
  }, 60_000);

  it("a poison message in a group fails alone: the others are stored once, it is stored as PROCESSING_FAILED after its tries", async () => {
    const { p } = t;
    const poison = await p.sendRaw("m@o.example", ["in@group-a.example"], poisonMessage("in@group-a.example"));
    const good = await p.sendRaw(
      "g@o.example",
      ["sales@group-a.example"],
      simpleMessage("g@o.example", "sales@group-a.example", "good"),
    );
    const [poisonRow] = await rowsOf(poison.spoolId!);
    const [goodRow] = await rowsOf(good.spoolId!);
    // The two in one group, as one accept statement would have written them.
    await waitFor(async () => (await p.queue.getJob(goodRow!.id)) ?? null, { what: "the good message's job" });
    await (await p.queue.getJob(goodRow!.id))?.remove();
    await p.prisma.spoolRecipient.update({ where: { id: goodRow!.id }, data: { jobId: poisonRow!.id } });

    t.startEngine({ concurrency: 2, maxTries: 2 }); // two tries: one retry, 2 s of backoff
    await p.processed(good.spoolId!);
    const stored = await p.processed(poison.spoolId!);
    expect(stored[0]?.status).toBe("stored");
    const failed = await p.prisma.email.findFirstOrThrow({ where: { spoolId: poison.spoolId! } });
    expect(failed.spfVerdict).toBe("PROCESSING_FAILED");
    expect(await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: poisonRow!.id } })).toMatchObject({
      attempts: 2,
    });
    // The good one was tried once and stored once, though its job ran twice.
    expect(await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: goodRow!.id } })).toMatchObject({
      attempts: 1,
      status: "stored",
    });
    expect(await p.prisma.email.count({ where: { spoolId: good.spoolId! } })).toBe(1);
  }, 120_000);
});
