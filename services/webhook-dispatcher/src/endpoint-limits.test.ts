import { createLogger } from "@mailroom/log";
import type { Redis } from "@mailroom/queues";
import { endpointLimits } from "./endpoint-limits.ts";
import type { EndpointSlots } from "./slots.ts";

/** The cross-process semaphore, in memory: `limit` holders per endpoint. */
function memorySlots(limit: number): EndpointSlots {
  const held = new Set<string>();
  return {
    async acquire(_endpointId, holder) {
      if (held.size >= limit) return false;
      held.add(holder);
      return true;
    },
    async release(_endpointId, holder) {
      held.delete(holder);
    },
  };
}

/** Resolves once the clock has moved on by `ms` (the age of the attempts in flight). */
async function clockMoved(ms: number) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) await new Promise((r) => setImmediate(r));
}

const LEASE = 60_000;

describe("endpoint limits: how many jobs wait in this process for an endpoint's slot", () => {
  it("before any attempt to it finished here: the limit, however young its attempts in flight", async () => {
    const { slots, pacedSlots } = endpointLimits({
      connection: undefined as unknown as Redis,
      prefix: "test",
      logger: createLogger("test", "silent"),
      concurrency: 48,
      endpointConcurrency: 2,
      endpointWaitMs: 600_000,
      slots: memorySlots(2),
    });
    expect(await pacedSlots.acquire("ep", "a", LEASE)).toBe(true);
    expect(await pacedSlots.acquire("ep", "b", LEASE)).toBe(true);
    // A few ms old: by the age alone ~2 × 600 s ÷ 2 ms jobs could wait; the endpoint may be hanging.
    await clockMoved(3);
    const waiting = [pacedSlots.acquire("ep", "c", LEASE), pacedSlots.acquire("ep", "d", LEASE)];
    expect(slots.saturated("ep")).toBe(true);
    expect(await pacedSlots.acquire("ep", "e", LEASE)).toBe(false);
    // Once an attempt finished here its time is known: more may wait (up to the worker's concurrency).
    await pacedSlots.release("ep", "a");
    expect(await waiting[0]).toBe(true);
    expect(slots.saturated("ep")).toBe(false);
    const more = pacedSlots.acquire("ep", "f", LEASE);
    for (const h of ["b", "c", "d"]) await pacedSlots.release("ep", h);
    expect(await waiting[1]).toBe(true);
    expect(await more).toBe(true);
    await pacedSlots.release("ep", "f");
    expect(slots.busyEndpoints()).toEqual([]);
  });
});
