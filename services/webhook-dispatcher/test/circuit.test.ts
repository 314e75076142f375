import { describe, expect, it } from "@jest/globals";
import { createEventPublisher, eventStreamKey } from "@mailroom/queues";
import { seedDelivery, seedEndpoint, waitFor } from "@mailroom/testing";
import { logger, queueFirstAttempt, useDispatchTest } from "./fixtures.ts";

/**
 * An endpoint's circuit against a real receiver: after a run of failures its deliveries wait for
 * one probe attempt at a time (each a real attempt of a real delivery), the endpoint shows
 * failingSince and the account's event stream says so; a success closes it and releases the rest.
 */
const t = useDispatchTest({ reply: { status: 500 } });

const DEADLINE = { timeoutMs: 90_000 };
const endpointRow = (id: string) => t.h.prisma.endpoint.findUniqueOrThrow({ where: { id } });
const deliveriesOf = (endpointId: string) =>
  t.h.prisma.delivery.findMany({ where: { endpointId }, orderBy: { id: "asc" } });
/** The account's live events (what GET /events streams), as type and endpoint. */
async function events(accountId: string): Promise<{ type: string; endpointId?: string }[]> {
  const entries = await t.h.producer.xrange(eventStreamKey(t.h.env.redisPrefix, accountId), "-", "+");
  return entries.map(([, fields]) => JSON.parse(fields[fields.indexOf("data") + 1] as string));
}
const dispatcher = (opts: { circuitThreshold: number; disableAfterMs?: number; concurrency?: number }) =>
  t.h.dispatcher({
    ...opts,
    // Probes are 1 to 120 backoff units apart: 20 ms to 2.4 s here. The sweeper brings the probe.
    sweepIntervalMs: 100,
    sweepGraceMs: 0,
    events: createEventPublisher(t.h.producer, t.h.env.redisPrefix, (err) => logger.warn(err.message)),
  });

describe("endpoint circuit", () => {
  it("after a run of failures only probes are attempted; failingSince and events; a success releases the rest", async () => {
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url, { maxAttempts: 10 });
    const ds = [];
    for (let i = 0; i < 12; i++) ds.push(await seedDelivery(t.h.prisma, t.s, ep));
    // One job at a time: exactly the threshold's attempts open the circuit, then each request is a probe.
    const d = dispatcher({ circuitThreshold: 3, concurrency: 1 });
    for (const x of ds) await queueFirstAttempt(t.h.queue, x.id);

    const failing = await waitFor(async () => (await endpointRow(ep)).failingSince, {
      ...DEADLINE,
      what: "the endpoint failing",
    });
    // Probes go on, one delivery's attempt each time; the receiver sees them.
    await waitFor(() => Promise.resolve(t.receiver.requests.length >= 3 + 4), { ...DEADLINE, what: "four probes" });
    // Every request is a recorded attempt (a probe spends one), and deliveries nobody probed were
    // never attempted: 12 deliveries at a 20 ms backoff would all have spent several by now.
    const { rows, seen } = await waitFor(
      async () => {
        const seen = t.receiver.requests.length;
        const r = await deliveriesOf(ep);
        const attempts = r.reduce((n, x) => n + x.attemptCount, 0);
        return attempts === seen && t.receiver.requests.length === seen ? { rows: r, seen } : null;
      },
      { ...DEADLINE, what: "every request recorded" },
    );
    expect(rows.filter((r) => r.attemptCount === 0).length).toBeGreaterThanOrEqual(12 - seen);
    expect(seen).toBeLessThan(12);
    expect(rows.every((r) => r.status === "pending" || r.status === "retrying")).toBe(true);
    const opened = await endpointRow(ep);
    expect(opened.failingSince).toEqual(failing);
    expect(opened.consecutiveFailures).toBeGreaterThanOrEqual(seen);

    // The endpoint comes back: the next probe succeeds, the circuit closes, every delivery goes out.
    t.receiver.respond(() => ({ status: 200 }));
    await waitFor(async () => (await deliveriesOf(ep)).every((r) => r.status === "delivered"), {
      ...DEADLINE,
      what: "every delivery delivered",
    });
    const closed = await endpointRow(ep);
    expect(closed.failingSince).toBeNull();
    expect(closed.consecutiveFailures).toBe(0);
    const types = (await events(t.s.accountId)).filter((e) => e.endpointId === ep).map((e) => e.type);
    expect(types).toEqual(["endpoint.failing", "endpoint.recovered"]);
    await d.close();
  }, 180_000);

  it("probes still spend attempts: every delivery ends dead after maxAttempts, none is attempted more", async () => {
    t.receiver.requests.length = 0;
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url, { maxAttempts: 3 });
    const ds = [];
    for (let i = 0; i < 3; i++) ds.push(await seedDelivery(t.h.prisma, t.s, ep));
    const d = dispatcher({ circuitThreshold: 2 });
    for (const x of ds) await queueFirstAttempt(t.h.queue, x.id);
    const rows = await waitFor(
      async () => {
        const r = await deliveriesOf(ep);
        return r.every((x) => x.status === "dead") ? r : null;
      },
      { ...DEADLINE, what: "every delivery dead" },
    );
    expect(rows.map((r) => r.attemptCount)).toEqual([3, 3, 3]);
    const attempts = await t.h.prisma.deliveryAttempt.count({ where: { deliveryId: { in: ds.map((x) => x.id) } } });
    expect(attempts).toBe(9);
    expect(t.receiver.requests).toHaveLength(9);
    expect((await endpointRow(ep)).failingSince).not.toBeNull();
    await d.close();
  }, 180_000);

  it("an endpoint failing longer than disableAfterMs is turned off and its deliveries wait, not die", async () => {
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url, { maxAttempts: 10 });
    const ds = [];
    for (let i = 0; i < 4; i++) ds.push(await seedDelivery(t.h.prisma, t.s, ep));
    const d = dispatcher({ circuitThreshold: 2, disableAfterMs: 1 });
    for (const x of ds) await queueFirstAttempt(t.h.queue, x.id);
    await waitFor(async () => !(await endpointRow(ep)).active, { ...DEADLINE, what: "the endpoint turned off" });
    await waitFor(
      async () => (await events(t.s.accountId)).some((e) => e.type === "endpoint.disabled" && e.endpointId === ep),
      {
        ...DEADLINE,
        what: "endpoint.disabled",
      },
    );
    await d.close();
    const rows = await deliveriesOf(ep);
    expect(rows.every((r) => r.status === "pending" || r.status === "retrying")).toBe(true);
  }, 180_000);
});
