import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { DnsServer, Receiver, Seeded } from "@mailroom/testing";
import { seedDelivery, seedDomain, seedEndpoint, startDnsServer, startReceiver, waitFor } from "@mailroom/testing";
import { type Harness, queueFirstAttempt, startHarness } from "./fixtures.ts";

/**
 * The SSRF guard at delivery time (ALLOW_PRIVATE_DESTINATIONS off): endpoint rows are written
 * straight to the database, as if their URL had passed the create-time check and the host's DNS
 * changed since. Where a URL can point at the live loopback receiver it does, so a missing guard
 * would show up as a request received, not only as a missing error message.
 */
let h: Harness;
let receiver: Receiver;
let other: Receiver;
let dns: DnsServer;
let s: Seeded;
let port: string;

beforeAll(async () => {
  [h, receiver, other, dns] = await Promise.all([
    startHarness(),
    startReceiver(),
    startReceiver(),
    startDnsServer({
      "internal.test": { A: ["127.0.0.1"] },
      "metadata.test": { A: ["169.254.169.254"] },
      "mixed.test": { A: ["93.184.215.14", "127.0.0.1"] },
      "ula.test": { AAAA: ["fd12:3456::1"] },
      "alias.test": { CNAME: ["internal.test"] },
    }),
  ]);
  h.resolver.setServers([dns.server]);
  s = await seedDomain(h.prisma, "acme.example");
  port = new URL(receiver.url).port;
});
afterAll(async () => {
  await h?.close();
  await Promise.all([receiver?.close(), other?.close(), dns?.close()]);
});

async function deliverOnce(url: string) {
  const ep = await seedEndpoint(h.prisma, s.accountId, url, { maxAttempts: 1 });
  const d = await seedDelivery(h.prisma, s, ep);
  await queueFirstAttempt(h.queue, d.id);
  return waitFor(
    async () => {
      const r = await h.prisma.delivery.findUnique({ where: { id: d.id }, include: { attempts: true } });
      return r && (r.status === "delivered" || r.status === "dead") ? r : null;
    },
    { what: `delivery to ${url} settled` },
  );
}

describe("delivery-time SSRF guard", () => {
  const matrix = () => [
    `http://127.0.0.1:${port}/hook`,
    `http://[::1]:${port}/hook`,
    "http://10.0.0.1/hook",
    "http://172.16.0.1/hook",
    "http://172.31.255.254/hook",
    "http://192.168.1.1/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/hook",
    `http://0.0.0.0:${port}/hook`,
    `http://[::ffff:127.0.0.1]:${port}/hook`,
    `http://[::ffff:7f00:1]:${port}/hook`,
    "http://[fc00::1]/hook",
    "http://[fd00:ec2::254]/hook",
    `http://localhost:${port}/hook`,
    `http://2130706433:${port}/hook`,
    `http://0x7f.1:${port}/hook`,
    `http://internal.test:${port}/hook`,
    `http://alias.test:${port}/hook`,
    "http://metadata.test/latest/meta-data/",
    `http://mixed.test:${port}/hook`,
    "http://ula.test/hook",
  ];

  it("refuses every non-public destination; nothing reaches the receiver", async () => {
    const guarded = h.dispatcher({ allowPrivate: false });
    for (const url of matrix()) {
      const done = await deliverOnce(url);
      expect({ url, status: done.status, error: done.lastError?.slice(0, 15) }).toEqual({
        url,
        status: "dead",
        error: "non-public URL:",
      });
      expect(done.attempts[0]).toMatchObject({ statusCode: null });
    }
    expect(receiver.requests).toHaveLength(0);
    // The names were asked of our DNS server, and the refusal names the address they resolved to.
    expect(dns.queries.some((q) => q.name === "internal.test")).toBe(true);
    const viaDns = await deliverOnce(`http://internal.test:${port}/x`);
    expect(viaDns.lastError).toBe(
      "non-public URL: internal.test resolves to 127.0.0.1: loopback address (127.0.0.0/8)",
    );
    await guarded.close();
  });

  it("Slack and Discord destinations are guarded the same way (a name that turned private)", async () => {
    const guarded = h.dispatcher({ allowPrivate: false });
    try {
      for (const type of ["slack", "discord"] as const) {
        const ep = await seedEndpoint(h.prisma, s.accountId, `http://internal.test:${port}/${type}`, {
          type,
          maxAttempts: 1,
        });
        const d = await seedDelivery(h.prisma, s, ep);
        await queueFirstAttempt(h.queue, d.id);
        const done = await waitFor(
          async () => {
            const r = await h.prisma.delivery.findUnique({ where: { id: d.id } });
            return r?.status === "dead" ? r : null;
          },
          { what: `${type} delivery dead` },
        );
        expect(done.lastError).toBe(
          "non-public URL: internal.test resolves to 127.0.0.1: loopback address (127.0.0.0/8)",
        );
      }
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await guarded.close();
    }
  });

  it("a redirect towards a private address is a failed attempt and is not followed", async () => {
    // The first hop must be reachable, i.e. a loopback receiver: this dispatcher allows private
    // destinations, so only the no-redirect rule stands between the receiver and the target.
    const lenient = h.dispatcher({ allowPrivate: true });
    try {
      receiver.respond((r) => ({
        status: r.path === "/to-metadata" ? 302 : 307,
        headers: { location: r.path === "/to-metadata" ? "http://169.254.169.254/latest/meta-data/" : other.url },
      }));
      for (const path of ["/to-metadata", "/to-other"]) {
        const ep = await seedEndpoint(h.prisma, s.accountId, `${receiver.url}${path}`, { maxAttempts: 1 });
        const d = await seedDelivery(h.prisma, s, ep);
        await queueFirstAttempt(h.queue, d.id);
        const done = await waitFor(
          async () => {
            const r = await h.prisma.delivery.findUnique({ where: { id: d.id } });
            return r?.status === "dead" ? r : null;
          },
          { what: "redirected delivery dead" },
        );
        expect(done.lastError).toMatch(/^redirect: HTTP 30[27] \(redirects are not followed\)$/);
      }
      expect(other.requests).toHaveLength(0);
    } finally {
      await lenient.close();
    }
  });
});
