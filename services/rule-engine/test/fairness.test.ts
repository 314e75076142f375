import { describe, expect, it } from "@jest/globals";
import type { Job } from "@mailroom/queues";
import { poisonMessage, seedAddress, seedDomain, simpleMessage, waitFor } from "@mailroom/testing";
import type { RuleEngine } from "../src/worker.ts";
import { useQueuedPipeline } from "./driven.ts";

/**
 * Fairness in the `inbound` queue, against the real ingest (jobs queued after each 250, at their
 * account's priority), Redis and the rule engine's worker: one account's backlog does not hold back
 * another account's mail, and retries of messages that fail do not hold back first tries. The
 * engine runs one job at a time and starts only once the jobs are queued, so the order in which it
 * takes them is the queue's alone.
 */
/** The last guard of every wait (a busy machine runs the 30 messages slowly; nothing here times anything). */
const GUARD_MS = 120_000;

describe("fairness in the inbound queue", () => {
  const t = useQueuedPipeline(async (p) => {
    const a = await seedDomain(p.prisma, "flood-a.example");
    const b = await seedDomain(p.prisma, "quiet-b.example");
    await seedAddress(p.prisma, a, "in");
    await seedAddress(p.prisma, b, "in");
    return { a, b };
  });
  const startEngine = () => t.startEngine({ concurrency: 1 });

  /** Accepted over SMTP; resolves once the ingest's job for it is in Redis. */
  const send = async (to: string, raw: string) => {
    const { p } = t;
    const r = await p.sendRaw("sender@outside.example", [to], raw);
    expect(r.response).toMatch(/^250 /);
    const rcpt = await p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
    await waitFor(async () => (await p.queue.getJob(rcpt.id)) ?? null, {
      what: `the job of ${rcpt.id}`,
      timeoutMs: GUARD_MS,
    });
    return { spoolId: r.spoolId!, rcptId: rcpt.id };
  };
  /**
   * Resolves once job `jobId` has completed and the worker is paused. BullMQ fetches the next job
   * as it completes one (one Redis call), and a paused worker fetches none: so after this, at most
   * that one job has run after `jobId`.
   */
  const pausedAfter = (engine: RuleEngine, jobId: string) =>
    new Promise<void>((resolve) => {
      const onCompleted = (job: Job) => {
        if (job.id !== jobId) return;
        engine.worker.off("completed", onCompleted);
        void engine.worker.pause().then(resolve);
      };
      engine.worker.on("completed", onCompleted);
    });
  const pendingOf = (accountId: string) => t.p.prisma.spoolRecipient.count({ where: { accountId, status: "pending" } });

  it("a flood to one account: another account's message is stored while the flood's backlog is still pending", async () => {
    const flood = 30;
    for (let i = 0; i < flood; i++)
      await send("in@flood-a.example", simpleMessage("x@o.example", "in@flood-a.example", `flood ${i}`));
    const quiet = await send("in@quiet-b.example", simpleMessage("y@o.example", "in@quiet-b.example", "one"));

    const engine = startEngine();
    await pausedAfter(engine, quiet.rcptId);
    expect((await t.p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: quiet.rcptId } })).status).toBe("stored");
    // First come, first served would have processed all 30 first. The quiet account's message ranks
    // with the flood's first; at most that one and the job fetched as it completed have been taken.
    expect(await pendingOf(t.seeded.a.accountId)).toBeGreaterThanOrEqual(flood - 2);
    engine.worker.resume();
    await waitFor(async () => (await pendingOf(t.seeded.a.accountId)) === 0, {
      what: "the flood processed",
      timeoutMs: GUARD_MS,
    });
  }, 600_000);

  it("retries of failing messages wait behind first tries, even in the same account", async () => {
    const poison = 6;
    const poisoned: { spoolId: string; rcptId: string }[] = [];
    for (let i = 0; i < poison; i++)
      poisoned.push(await send("in@flood-a.example", poisonMessage("in@flood-a.example")));
    const { p } = t;
    const tries = async () =>
      (await p.prisma.spoolRecipient.findMany({ where: { id: { in: poisoned.map((x) => x.rcptId) } } })).map(
        (r) => r.attempts,
      );

    const engine = startEngine();
    await waitFor(async () => (await tries()).every((n) => n >= 1), {
      what: "every poison message's first try",
      timeoutMs: GUARD_MS,
    });
    // Hold the worker; every retry still backing off is made due now, so all of them are in line
    // before the good message's first try is queued behind them.
    await engine.worker.pause();
    // One by one (Job#promote puts a job where it belongs; Queue#promoteJobs ignores priorities).
    for (const job of await p.queue.getDelayed()) await job.promote();
    expect(await p.queue.getDelayedCount()).toBe(0);
    const before = await tries();
    const good = await send("in@flood-a.example", simpleMessage("z@o.example", "in@flood-a.example", "good"));
    const goodDone = pausedAfter(engine, good.rcptId);
    engine.worker.resume();

    await goodDone;
    const row = await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: good.rcptId } });
    expect(row.status).toBe("stored");
    // Behind the good message: at most the one retry fetched as it completed has begun.
    const after = await tries();
    expect(after.filter((n, i) => n > (before[i] as number)).length).toBeLessThanOrEqual(1);
  }, 600_000);
});
