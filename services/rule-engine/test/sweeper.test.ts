import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import { seedAddress, seedDomain, simpleMessage, waitFor } from "@mailroom/testing";
import { sweepPendingRecipients } from "../src/sweeper.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

/** The inbound sweeper finds every recipient whose job is gone, however many are ahead of it. */
describe("inbound sweeper", () => {
  let p: Pipeline;

  beforeAll(async () => {
    p = await startPipeline({ engine: false });
    const d = await seedDomain(p.prisma, "sweep.example");
    await seedAddress(p.prisma, d, "in");
  });
  afterAll(async () => {
    await p?.stop();
  });

  const accept = async (subject: string) => {
    const r = await p.sendRaw("a@s.test", ["in@sweep.example"], simpleMessage("a@s.test", "in@sweep.example", subject));
    expect(r.response).toMatch(/^250 /);
    return p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! }, select: { id: true } });
  };

  it("pages past more pending recipients than one page whose jobs are still queued, and re-queues the lost ones behind them", async () => {
    // 30 older recipients still have their jobs (e.g. poison messages backing off); 10 newer ones
    // lost theirs (Redis restarted). A single page of 20 would only ever see the first 30.
    const ahead = [];
    for (let i = 0; i < 30; i++) ahead.push((await accept(`ahead ${i}`)).id);
    const lost = [];
    for (let i = 0; i < 10; i++) {
      const { id } = await accept(`lost ${i}`);
      await (await p.queue.getJob(id))?.remove();
      lost.push(id);
    }

    expect(await sweepPendingRecipients(p.prisma, p.queue, logger, { olderThanMs: 0, pageSize: 20 })).toBe(10);
    // Queued again, each at its account's priority (fairness between accounts): waiting in line.
    for (const id of lost) expect(await p.queue.getJobState(id)).toBe("prioritized");
    // The ones still queued were left alone, and a second pass has nothing to do.
    expect(await p.queue.getJobCountByTypes("waiting", "prioritized")).toBe(40);
    expect(await sweepPendingRecipients(p.prisma, p.queue, logger, { olderThanMs: 0, pageSize: 20 })).toBe(0);
    expect(ahead).toHaveLength(30);
  });

  it("queues lost jobs again at their account's priority, so one account's many do not go ahead of another's one", async () => {
    const b = await seedDomain(p.prisma, "sweep-b.example");
    await seedAddress(p.prisma, b, "in");
    const lost = async (to: string) => {
      const r = await p.sendRaw("a@s.test", [to], simpleMessage("a@s.test", to, "lost"));
      const { id } = await p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
      await waitFor(async () => (await p.queue.getJob(id)) ?? null, { what: "the ingest's job" });
      await (await p.queue.getJob(id))?.remove();
      return id;
    };
    const many = [];
    for (let i = 0; i < 5; i++) many.push(await lost("in@sweep.example"));
    const one = await lost("in@sweep-b.example");

    expect(await sweepPendingRecipients(p.prisma, p.queue, logger, { olderThanMs: 0 })).toBe(6);
    const priorities = async (ids: string[]) =>
      Promise.all(ids.map(async (id) => (await p.queue.getJob(id))?.priority));
    expect(await priorities(many)).toEqual([1, 2, 3, 4, 5]);
    expect(await priorities([one])).toEqual([1]);
  });
});
