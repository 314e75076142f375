import { describe, expect, it } from "@jest/globals";
import { seedDelivery, seedEndpoint, waitFor } from "@mailroom/testing";
import { type HoldingServer, queueFirstAttempt, startHoldingServer, useDispatchTest } from "./fixtures.ts";

/**
 * One endpoint's trouble stays its own, against real HTTP servers: an endpoint that never answers
 * holds its slots and nothing else (a healthy endpoint's deliveries complete meanwhile, even with
 * as few workers as it has slots), and its backlog waits in its line, the slot limit holding across
 * two dispatcher processes.
 */
const t = useDispatchTest({ reply: { status: 200 } });
const DEADLINE = { timeoutMs: 90_000 };

const lineOf = (endpointId: string) => `${t.h.env.redisPrefix}:endpoint-held:${endpointId}`;
const statuses = async (endpointId: string) =>
  (await t.h.prisma.delivery.findMany({ where: { endpointId } })).map((d) => d.status);

async function withHolding(fn: (hang: HoldingServer) => Promise<void>) {
  const hang = await startHoldingServer();
  try {
    await fn(hang);
  } finally {
    hang.releaseAll();
    await hang.close();
  }
}

describe("endpoint isolation", () => {
  it("a hanging endpoint holds at most its slots: a healthy endpoint's deliveries complete while it hangs", async () => {
    await withHolding(async (hang) => {
      const stuck = await seedEndpoint(t.h.prisma, t.s.accountId, hang.url, { timeoutSeconds: 30 });
      const good = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url);
      // As many workers as the hanging endpoint has slots: without isolation its requests would
      // take every worker for their 30 s timeout.
      const d = t.h.dispatcher({ concurrency: 2, endpointConcurrency: 2, detachAfterMs: 200 });
      const stuckIds = [];
      for (let i = 0; i < 10; i++) stuckIds.push((await seedDelivery(t.h.prisma, t.s, stuck)).id);
      for (const id of stuckIds) await queueFirstAttempt(t.h.queue, id);
      await waitFor(() => Promise.resolve(hang.held === 2), { ...DEADLINE, what: "two requests hanging" });
      const goodIds = [];
      for (let i = 0; i < 10; i++) goodIds.push((await seedDelivery(t.h.prisma, t.s, good)).id);
      for (const id of goodIds) await queueFirstAttempt(t.h.queue, id);
      await waitFor(async () => (await statuses(good)).every((s) => s === "delivered"), {
        ...DEADLINE,
        what: "the healthy endpoint's deliveries",
      });
      // All while the hanging requests were still open: none of them ended or was recorded.
      expect(await t.h.prisma.deliveryAttempt.count({ where: { deliveryId: { in: stuckIds } } })).toBe(0);
      expect(hang.received).toBe(2);
      expect(hang.maxHeld).toBe(2);
      // The rest of its backlog waits in its line, not round the queue.
      await waitFor(async () => (await t.h.producer.zcard(lineOf(stuck))) === 8, { ...DEADLINE, what: "8 in line" });
      expect(await t.h.queue.getDelayedCount()).toBe(0);
      // Once it answers, its line drains through its own slots.
      hang.releaseAll();
      await waitFor(async () => (await statuses(stuck)).every((s) => s === "delivered"), {
        ...DEADLINE,
        what: "the backlog delivered",
      });
      expect(hang.maxHeld).toBe(2);
      await d.close();
    });
  }, 180_000);

  it("the per-endpoint limit holds across two dispatcher processes; the line drains when it answers", async () => {
    await withHolding(async (hang) => {
      const ep = await seedEndpoint(t.h.prisma, t.s.accountId, hang.url, { timeoutSeconds: 30 });
      const a = t.h.dispatcher({ concurrency: 6, endpointConcurrency: 3, detachAfterMs: 200 });
      const b = t.h.dispatcher({ concurrency: 6, endpointConcurrency: 3, detachAfterMs: 200 });
      const ids = [];
      for (let i = 0; i < 12; i++) ids.push((await seedDelivery(t.h.prisma, t.s, ep)).id);
      for (const id of ids) await queueFirstAttempt(t.h.queue, id);
      // Every job ran: 3 requests open (the limit, shared through Redis), the other 9 in line.
      await waitFor(async () => hang.held === 3 && (await t.h.producer.zcard(lineOf(ep))) === 9, {
        ...DEADLINE,
        what: "3 open and 9 in line",
      });
      expect(hang.maxHeld).toBe(3);
      hang.releaseAll();
      await waitFor(async () => (await statuses(ep)).every((s) => s === "delivered"), {
        ...DEADLINE,
        what: "all delivered",
      });
      expect(hang.received).toBe(12);
      await a.close();
      await b.close();
    });
  }, 180_000);
});
