import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type AttemptRecord, claimDeliveries, claimDelivery, recordAttempts } from "@mailroom/deliveries";
import { type Seeded, seedDelivery, seedDomain, seedEndpoint } from "@mailroom/testing";
import { type Harness, startHarness } from "./fixtures.ts";

let h: Harness;
let s: Seeded;
beforeAll(async () => {
  h = await startHarness();
  s = await seedDomain(h.prisma, "acme.example");
});
afterAll(() => h.close());

const claim = (id: string, busyEndpoints: string[] = []) => {
  const now = new Date();
  return claimDelivery(h.prisma, id, { expectedCount: 0, dueBy: now, now, leaseMarginMs: 15_000, busyEndpoints });
};

describe("claiming an attempt", () => {
  it("takes a lease of the endpoint timeout + margin; a second claim of the same attempt gets nothing", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, "http://127.0.0.1:9/hook", { timeoutSeconds: 7 });
    const d = await seedDelivery(h.prisma, s, ep);
    const seeded = await h.prisma.delivery.findUniqueOrThrow({ where: { id: d.id } });
    const before = Date.now();
    const first = await claim(d.id);
    expect(first?.busy).toBe(false);
    expect(first?.previousNextAttemptAt).toEqual(seeded.nextAttemptAt); // what a give-back restores
    const lease = (await h.prisma.delivery.findUniqueOrThrow({ where: { id: d.id } })).nextAttemptAt as Date;
    expect(lease.getTime()).toBeGreaterThanOrEqual(before + 22_000);
    expect(await claim(d.id)).toBeNull();
  });

  it("for an endpoint with no slot free here: says busy, with the endpoint, and leaves the row as it was", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, "http://127.0.0.1:9/hook");
    const d = await seedDelivery(h.prisma, s, ep);
    const row = await h.prisma.delivery.findUniqueOrThrow({ where: { id: d.id } });
    const busy = await claim(d.id, ["ep_other", ep]);
    expect(busy).toMatchObject({ busy: true, endpointId: ep });
    expect(await h.prisma.delivery.findUniqueOrThrow({ where: { id: d.id } })).toEqual(row);
    // Once the endpoint has room, the same attempt is claimed.
    expect((await claim(d.id))?.busy).toBe(false);
  });

  it("for a busy endpoint: answers without waiting for a row lock another transaction holds", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, "http://127.0.0.1:9/hook");
    const d = await seedDelivery(h.prisma, s, ep);
    // A claimer (or the API) holds the row: a busy answer needs no lock, so it does not queue behind
    // it (it took FOR UPDATE before, and here would wait for this transaction, which waits for it).
    const busy = await h.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT "id" FROM "deliveries" WHERE "id" = ${d.id} FOR UPDATE`;
      return claim(d.id, [ep]);
    });
    expect(busy).toMatchObject({ busy: true, endpointId: ep });
  });

  it("claims many in one statement, each on its own conditions; a repeated id is claimed for one caller only", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, "http://127.0.0.1:9/hook");
    const [a, b, c] = [
      await seedDelivery(h.prisma, s, ep),
      await seedDelivery(h.prisma, s, ep),
      await seedDelivery(h.prisma, s, ep),
    ];
    const now = new Date();
    const req = (id: string, expectedCount?: number) => ({
      id,
      dueBy: now,
      now,
      ...(expectedCount === undefined ? {} : { expectedCount }),
    });
    const out = await claimDeliveries(
      h.prisma,
      [req(a.id, 0), req(b.id, 3), req(c.id), req(a.id, 0), req("dlv_missing")],
      { leaseMarginMs: 15_000 },
    );
    expect(out.map((d) => d?.id ?? null)).toEqual([a.id, null, c.id, null, null]); // b: not at attempt 3
    expect(out[0]?.email.id).toBe(a.emailId);
    expect(out[2]?.email.id).toBe(c.emailId);
    // Claimed: a second statement finds both leased; b was left alone and is claimable.
    const again = await claimDeliveries(h.prisma, [req(a.id), req(b.id), req(c.id)], { leaseMarginMs: 15_000 });
    expect(again.map((d) => d?.id ?? null)).toEqual([null, b.id, null]);
  });
});

describe("recording attempts", () => {
  it("records many in one statement, each only if its delivery is still at the claimed count", async () => {
    const ep = await seedEndpoint(h.prisma, s.accountId, "http://127.0.0.1:9/hook");
    const [a, b] = [await seedDelivery(h.prisma, s, ep), await seedDelivery(h.prisma, s, ep)];
    const t = new Date();
    const rec = (deliveryId: string, previousCount: number, status: string): AttemptRecord => ({
      deliveryId,
      previousCount,
      attempt: previousCount + 1,
      status,
      nextAttemptAt: status === "retrying" ? new Date(t.getTime() + 60_000) : null,
      statusCode: status === "delivered" ? 200 : 503,
      error: status === "delivered" ? null : "HTTP 503",
      deliveredAt: status === "delivered" ? t : null,
      durationMs: 12,
      responseBody: "ok",
      startedAt: t,
      finishedAt: t,
    });
    expect(await recordAttempts(h.prisma, [rec(a.id, 0, "delivered"), rec(b.id, 0, "retrying")])).toEqual([true, true]);
    // The same attempts again (a second worker, a retried statement): nothing is recorded twice.
    expect(await recordAttempts(h.prisma, [rec(a.id, 0, "delivered"), rec(b.id, 1, "dead")])).toEqual([false, true]);
    const rows = await h.prisma.delivery.findMany({
      where: { id: { in: [a.id, b.id] } },
      include: { attempts: { orderBy: { number: "asc" } } },
      orderBy: { createdAt: "asc" },
    });
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(a.id)).toMatchObject({ status: "delivered", attemptCount: 1, lastStatusCode: 200 });
    expect(byId.get(a.id)?.attempts.map((x) => x.number)).toEqual([1]);
    expect(byId.get(b.id)).toMatchObject({ status: "dead", attemptCount: 2, nextAttemptAt: null });
    expect(byId.get(b.id)?.attempts.map((x) => [x.number, x.statusCode, x.durationMs])).toEqual([
      [1, 503, 12],
      [2, 503, 12],
    ]);
  });
});
