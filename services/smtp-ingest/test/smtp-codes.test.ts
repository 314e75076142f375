import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { monthKey } from "@mailroom/core";
import { monthlyReceived } from "@mailroom/db";
import { type Ingest, type IngestEnv, ingestEnv } from "@mailroom/stack";
import type { Seeded } from "@mailroom/testing";
import { connect, rawSession, seedAddress, seedDomain, send, sendOnce, simpleMessage } from "@mailroom/testing";

/**
 * Every RCPT/DATA reply code of DESIGN.md §3.1 as a real client (nodemailer's SMTP connection)
 * sees it, and what is — or is not — left in the spool behind it.
 */
describe("smtp-ingest reply codes", () => {
  let t: IngestEnv;
  let ingest: Ingest;
  let d: Seeded;

  beforeAll(async () => {
    t = await ingestEnv();
    ingest = await t.start({ maxMessageBytes: 200_000, maxRecipients: 5 });
    d = await seedDomain(t.prisma, "codes.example");
    await seedAddress(t.prisma, d, "support");
    await seedAddress(t.prisma, d, "old", { active: false });
    for (let i = 0; i < 6; i++) await seedAddress(t.prisma, d, `team${i}`);
    await seedDomain(t.prisma, "pending.example", { status: "pending", catchAll: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  const spoolCount = () => t.prisma.spooledMessage.count();

  it("250 2.0.0 with the spool id, only once the spool row and the job exist", async () => {
    const r = await sendOnce(
      { port: ingest.port },
      { from: "a@sender.example", to: ["support@codes.example"] },
      simpleMessage("a@sender.example", "support@codes.example"),
    );
    expect(r).toMatchObject({ ok: true, accepted: ["support@codes.example"] });
    const m = /^250 2\.0\.0 Ok: queued as (spl_\w+)$/.exec(r.response);
    expect(m).not.toBeNull();
    const spool = await t.prisma.spooledMessage.findUnique({ where: { id: m![1]! }, include: { recipients: true } });
    expect(spool?.recipients).toHaveLength(1);
    const job = await t.queue.getJob(spool!.recipients[0]!.id);
    expect(job?.data).toEqual({ spoolRecipientId: spool!.recipients[0]!.id });
  });

  it("550 5.1.1 for an unknown local part, an unverified domain and a domain we do not host", async () => {
    for (const rcpt of ["nobody@codes.example", "x@pending.example", "x@not-hosted.example"]) {
      const before = await spoolCount();
      const r = await sendOnce(
        { port: ingest.port },
        { from: "a@sender.example", to: [rcpt] },
        simpleMessage("a@sender.example", rcpt),
      );
      expect(r.ok).toBe(false);
      expect(r.rejectedErrors[0]?.response).toMatch(/^550 5\.1\.1 /);
      expect(await spoolCount()).toBe(before);
    }
  });

  it("550 5.2.1 for an inactive address", async () => {
    const r = await sendOnce(
      { port: ingest.port },
      { from: "a@sender.example", to: ["old@codes.example"] },
      simpleMessage("a@sender.example", "old@codes.example"),
    );
    expect(r.ok).toBe(false);
    expect(r.rejectedErrors[0]?.response).toMatch(/^550 5\.2\.1 /);
  });

  it("accepts the good recipients of a mixed envelope and rejects the others one by one", async () => {
    const r = await sendOnce(
      { port: ingest.port },
      { from: "a@sender.example", to: ["support@codes.example", "nobody@codes.example", "old@codes.example"] },
      simpleMessage("a@sender.example", "support@codes.example"),
    );
    expect(r.ok).toBe(true);
    expect(r.accepted).toEqual(["support@codes.example"]);
    expect(r.rejectedErrors.map((e) => e.response.slice(0, 9)).sort()).toEqual(["550 5.1.1", "550 5.2.1"]);
    const spoolId = /queued as (spl_\w+)/.exec(r.response)![1]!;
    expect(await t.prisma.spoolRecipient.count({ where: { spoolId } })).toBe(1);
  });

  it("452 4.5.3 above the recipient limit; the first ones are still delivered", async () => {
    const to = Array.from({ length: 6 }, (_, i) => `team${i}@codes.example`);
    const r = await sendOnce(
      { port: ingest.port },
      { from: "a@sender.example", to },
      simpleMessage("a@sender.example", to[0]!),
    );
    expect(r.ok).toBe(true);
    expect(r.accepted).toHaveLength(5);
    expect(r.rejectedErrors).toHaveLength(1);
    expect(r.rejectedErrors[0]?.response).toMatch(/^452 4\.5\.3 /);
  });

  it("452 4.2.2 when the account is over its monthly allotment", async () => {
    const full = await seedDomain(t.prisma, "full.example", { plan: "free" });
    await seedAddress(t.prisma, full, "info");
    await t.prisma.usageCounter.create({
      data: { accountId: full.accountId, month: monthKey(new Date()), received: 3_000 },
    });
    const r = await sendOnce(
      { port: ingest.port },
      { from: "a@sender.example", to: ["info@full.example"] },
      simpleMessage("a@sender.example", "info@full.example"),
    );
    expect(r.ok).toBe(false);
    expect(r.rejectedErrors[0]?.response).toMatch(/^452 4\.2\.2 /);
    expect(r.rejectedErrors[0]?.response).toMatch(/admin accounts set-plan/);
    // One below the allotment is accepted and counted.
    await t.prisma.usageCounter.update({
      where: { accountId_month: { accountId: full.accountId, month: monthKey(new Date()) } },
      data: { received: 2_999 },
    });
    const ok = await sendOnce(
      { port: ingest.port },
      { from: "a@sender.example", to: ["info@full.example"] },
      simpleMessage("a@sender.example", "info@full.example"),
    );
    expect(ok.ok).toBe(true);
    expect(await monthlyReceived(t.prisma, full.accountId, monthKey(new Date()))).toBe(3_000);
  });

  it("a selfhosted account has no allotment: accepted far past any plan's", async () => {
    const own = await seedDomain(t.prisma, "own.example", { plan: "selfhosted" });
    await seedAddress(t.prisma, own, "info");
    await t.prisma.usageCounter.create({
      data: { accountId: own.accountId, month: monthKey(new Date()), received: 5_000_000 },
    });
    const r = await sendOnce(
      { port: ingest.port },
      { from: "a@sender.example", to: ["info@own.example"] },
      simpleMessage("a@sender.example", "info@own.example"),
    );
    expect(r.ok).toBe(true);
    expect(await monthlyReceived(t.prisma, own.accountId, monthKey(new Date()))).toBe(5_000_001);
  });

  it("552 5.3.4 for a message over the size limit, and nothing is spooled", async () => {
    const before = await spoolCount();
    const big = simpleMessage("a@sender.example", "support@codes.example", "big", `${"x".repeat(998)}\r\n`.repeat(400));
    const r = await sendOnce({ port: ingest.port }, { from: "a@sender.example", to: ["support@codes.example"] }, big);
    expect(r.ok).toBe(false);
    expect(r.response).toMatch(/^552 5\.3\.4 /);
    expect(await spoolCount()).toBe(before);
    // The connection stays usable: the next message on it is accepted.
    const conn = await connect({ port: ingest.port });
    const r1 = await send(conn, { from: "a@sender.example", to: ["support@codes.example"] }, big);
    const r2 = await send(
      conn,
      { from: "a@sender.example", to: ["support@codes.example"] },
      simpleMessage("a@sender.example", "support@codes.example"),
    );
    conn.quit();
    expect(r1.response).toMatch(/^552 5\.3\.4 /);
    expect(r2.response).toMatch(/^250 2\.0\.0 /);
  });

  it("552 5.3.4 at MAIL FROM when the declared SIZE is over the limit", async () => {
    // nodemailer refuses such a message itself before MAIL FROM, so this one speaks SMTP directly.
    const s = await rawSession(ingest.port);
    await s.next(/^220 /);
    s.write("EHLO client.example");
    await s.next(/^250 /);
    s.write("MAIL FROM:<a@sender.example> SIZE=5000000");
    expect(await s.next(/^5\d\d /)).toMatch(/^552 5\.3\.4 /);
    s.write("QUIT");
    await s.closed;
  });
});
