import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { claimDelivery } from "../src/store.ts";
import { type Harness, type Seeded, seedAccount, seedDelivery, seedEndpoint, startHarness } from "./fixtures.ts";

let h: Harness;
let s: Seeded;
beforeAll(async () => {
  h = await startHarness();
  s = await seedAccount(h.prisma);
});
afterAll(() => h.close());

const claim = (id: string, busyEndpoints: string[] = []) => {
  const now = new Date();
  return claimDelivery(h.prisma, id, { expectedCount: 0, dueBy: now, now, leaseMarginMs: 15_000, busyEndpoints });
};

describe("claiming an attempt", () => {
  it("takes a lease of the endpoint timeout + margin; a second claim of the same attempt gets nothing", async () => {
    const ep = await seedEndpoint(h.prisma, s, { url: "http://127.0.0.1:9/hook", timeoutSeconds: 7 });
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
    const ep = await seedEndpoint(h.prisma, s, { url: "http://127.0.0.1:9/hook" });
    const d = await seedDelivery(h.prisma, s, ep);
    const row = await h.prisma.delivery.findUniqueOrThrow({ where: { id: d.id } });
    const busy = await claim(d.id, ["ep_other", ep.id]);
    expect(busy).toMatchObject({ busy: true, endpointId: ep.id });
    expect(await h.prisma.delivery.findUniqueOrThrow({ where: { id: d.id } })).toEqual(row);
    // Once the endpoint has room, the same attempt is claimed.
    expect((await claim(d.id))?.busy).toBe(false);
  });
});
