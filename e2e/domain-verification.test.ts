import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createDomainDns } from "@mailroom/domain-verification";
import { type DnsServer, startDnsServer, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Done-when of issue 7: with a loopback DNS server serving the records POST /domains returned, a new
 * domain becomes verified with no manual step and mail to it is accepted; before that SMTP refuses
 * it with 550 5.1.1. The verifier's clock is moved a minute ahead instead of waiting for its first
 * scheduled check. No step depends on how fast the machine is: a lookup gets 10 s per try (a
 * timed-out lookup is an inconclusive check, and the verifier's next scheduled one is minutes
 * away on its clock), and every wait is for a row or an answer, up to 90 s.
 */
describe("end to end: DNS records → automatic verification → mail accepted", () => {
  let stack: Stack;
  let dns: DnsServer;
  let acct: TestAccount;
  let clockOffsetMs = 0;

  beforeAll(async () => {
    dns = await startDnsServer();
    stack = await startStack({
      services: { dispatcher: false, domainVerifier: true },
      domainDns: createDomainDns({ servers: [dns.server], timeoutMs: 10_000, tries: 1 }),
      verifier: { now: () => new Date(Date.now() + clockOffsetMs), pollIntervalMs: 50 },
    });
    acct = await stack.account();
  }, 180_000);
  afterAll(async () => {
    await stack?.close();
    await dns?.close();
  });

  const send = (to: string) =>
    nodemailer
      .createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({ from: "alice@sender.example", to, subject: "hello", text: "is anyone there?" });

  it("refuses mail while pending, verifies from DNS alone, then accepts mail", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "auto-verify.com" });
    expect(dom.status).toBe(201);
    const addr = await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "hello" });
    expect(addr.status).toBe(201);

    // Pending: SMTP says the recipient does not exist.
    const refused = await send("hello@auto-verify.com").then(
      () => null,
      (err: { responseCode?: number; response?: string }) => err,
    );
    expect(refused?.responseCode).toBe(550);
    expect(refused?.response).toContain("5.1.1");

    // Only part of the records: a minute later the verifier looks, and the domain stays pending.
    const records = dom.body.dnsRecords as { type: string; name: string; value: string; priority?: number }[];
    const [mx, ...cnames] = records;
    if (!mx) throw new Error("no MX record returned");
    dns.set(mx.name, "MX", [{ priority: mx.priority ?? 10, exchange: mx.value }]);
    clockOffsetMs = 61_000;
    const checked = await waitFor(
      async () => {
        const row = await stack.prisma.domain.findUniqueOrThrow({ where: { id: dom.body.id } });
        return row.checkCount >= 1 ? row : undefined;
      },
      { what: "the first scheduled check", timeoutMs: 90_000 },
    );
    expect(checked.status).toBe("pending");
    expect(dns.queries.some((q) => q.type === "MX" && q.name.toLowerCase() === "auto-verify.com")).toBe(true);

    // Every record published; by the next scheduled check (5 m later on the verifier's clock) it verifies.
    for (const c of cnames) dns.set(c.name, "CNAME", [c.value]);
    clockOffsetMs += 5 * 60_000;
    const verified = await waitFor(
      async () => {
        const got = await acct.api("GET", `/api/v1/domains/${dom.body.id}`);
        return got.body.status === "verified" ? got.body : undefined;
      },
      { what: "the domain to verify", timeoutMs: 90_000 },
    );
    expect(verified).toMatchObject({ status: "verified", warning: null });
    expect(verified.verifiedAt).not.toBeNull();

    const info = await send("hello@auto-verify.com");
    expect(info.accepted).toEqual(["hello@auto-verify.com"]);
    const listed = await waitFor(
      async () => {
        const list = await acct.api("GET", "/api/v1/emails");
        return list.body.data?.length === 1 ? list.body.data : undefined;
      },
      { what: "the email to be stored", timeoutMs: 90_000 },
    );
    expect(listed[0].id).toMatch(/^em_/);
  }, 300_000);
});
