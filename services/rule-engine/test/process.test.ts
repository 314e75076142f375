import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import { mimeWithAttachment, type Seeded, seedAddress, seedDomain, seedEndpoint, waitFor } from "@mailroom/testing";
import { processRecipient } from "../src/process.ts";
import { sweepPendingRecipients } from "../src/sweeper.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const mail = (o: { from?: string; to: string; subject?: string; id?: string; extra?: string; body?: string }) =>
  [
    `From: ${o.from ?? "Sender <sender@outside.example>"}`,
    `To: ${o.to}`,
    `Subject: ${o.subject ?? "hello"}`,
    ...(o.id ? [`Message-ID: ${o.id}`] : []),
    ...(o.extra ? [o.extra] : []),
    "Date: Sat, 21 Nov 2026 10:00:00 +0000",
    "",
    o.body ?? "Hello.",
    "",
  ].join("\r\n");

/** Routing, plus-addressing, threads, idempotency and hostile input, SMTP in → rows out. */
describe("rule engine processing", () => {
  let p: Pipeline;
  let d: Seeded;
  let catchAllEp: string;
  let userEp: string;

  beforeAll(async () => {
    // 40 MB: a 25 MB attachment is ~34 MB once base64-encoded on the wire.
    p = await startPipeline({ maxMessageBytes: 40_000_000 });
    d = await seedDomain(p.prisma, "route.example");
    catchAllEp = await seedEndpoint(p.prisma, d.accountId, "http://127.0.0.1:9/catch-all");
    userEp = await seedEndpoint(p.prisma, d.accountId, "http://127.0.0.1:9/user");
    await p.prisma.domain.update({
      where: { id: d.domainId },
      data: { catchAllEnabled: true, catchAllEndpointId: catchAllEp },
    });
    await seedAddress(p.prisma, d, "sales"); // store-only
    await seedAddress(p.prisma, d, "user", { endpointId: userEp });
    await seedAddress(p.prisma, d, "user+vip"); // explicit, store-only
    await seedAddress(p.prisma, d, "gone", { active: false, endpointId: userEp });
  });
  afterAll(async () => {
    await p?.stop();
  });

  const deliver = async (to: string, raw?: string) => {
    const r = await p.sendRaw(
      "sender@outside.example",
      [to],
      raw ?? mail({ to, id: `<${Math.random()}@outside.example>` }),
    );
    expect(r.response).toMatch(/^250 /);
    await p.processed(r.spoolId!);
    const email = await p.prisma.email.findFirstOrThrow({
      where: { spoolId: r.spoolId! },
      include: { deliveries: true, attachments: true },
    });
    return email;
  };

  it("an explicit store-only address claims its local part from the catch-all", async () => {
    const e = await deliver("sales@route.example");
    expect(e).toMatchObject({ recipient: "sales@route.example", plusTag: null, deliveries: [] });
    expect(e.addressId).not.toBeNull();
  });

  it("the catch-all takes every other local part, to its endpoint", async () => {
    const e = await deliver("anything@route.example");
    expect(e.addressId).toBeNull();
    expect(e.deliveries.map((x) => x.endpointId)).toEqual([catchAllEp]);
  });

  it("user+tag routes to user and records the tag; an explicit user+vip wins and has no tag", async () => {
    const tagged = await deliver("user+invoices@route.example");
    expect(tagged).toMatchObject({ recipient: "user+invoices@route.example", plusTag: "invoices" });
    expect(tagged.deliveries.map((x) => x.endpointId)).toEqual([userEp]);
    const vip = await deliver("user+vip@route.example");
    expect(vip).toMatchObject({ plusTag: null, deliveries: [] });
  });

  it("an inactive address rejects even with a catch-all (550 5.2.1)", async () => {
    const r = await p.sendRaw("sender@outside.example", ["gone@route.example"], mail({ to: "gone@route.example" }));
    expect(r.rejectedErrors[0]?.response).toMatch(/^550 5\.2\.1 /);
  });

  it("threads by In-Reply-To and References within one account, never across accounts", async () => {
    const a = await deliver(
      "sales@route.example",
      mail({ to: "sales@route.example", id: "<t-a@outside.example>", subject: "Plan" }),
    );
    const b = await deliver(
      "sales@route.example",
      mail({
        to: "sales@route.example",
        id: "<t-b@outside.example>",
        subject: "Re: Plan",
        extra: "In-Reply-To: <t-a@outside.example>",
      }),
    );
    const c = await deliver(
      "sales@route.example",
      mail({
        to: "sales@route.example",
        id: "<t-c@outside.example>",
        extra: "References: <unknown@x.example> <t-b@outside.example>",
      }),
    );
    const lone = await deliver("sales@route.example", mail({ to: "sales@route.example", id: "<t-d@outside.example>" }));
    expect(b.threadId).toBe(a.threadId);
    expect(c.threadId).toBe(a.threadId);
    expect(lone.threadId).not.toBe(a.threadId);
    expect(b.inReplyTo).toBe("<t-a@outside.example>");

    const other = await seedDomain(p.prisma, "other-account.example", { catchAll: true });
    const foreign = await deliver(
      "x@other-account.example",
      mail({ to: "x@other-account.example", id: "<t-e@outside.example>", extra: "In-Reply-To: <t-a@outside.example>" }),
    );
    expect(foreign.accountId).toBe(other.accountId);
    expect(foreign.threadId).not.toBe(a.threadId);
    const thread = await p.prisma.email.findMany({ where: { threadId: a.threadId }, orderBy: { receivedAt: "asc" } });
    expect(thread.map((e) => e.messageId)).toEqual([
      "<t-a@outside.example>",
      "<t-b@outside.example>",
      "<t-c@outside.example>",
    ]);
  });

  it("the same message sent twice (even via another relay) is stored once; another recipient gets its own copy", async () => {
    const raw = mail({ to: "user@route.example", id: "<dup-1@outside.example>", subject: "once" });
    const first = await deliver("user@route.example", raw);
    const again = await p.sendRaw(
      "sender@outside.example",
      ["user@route.example"],
      `Received: from relay2.example by mx; Sat, 21 Nov 2026 10:01:00 +0000\r\n${raw}`,
    );
    expect(again.response).toMatch(/^250 /);
    await p.processed(again.spoolId!);
    expect(
      await p.prisma.email.count({ where: { messageId: "<dup-1@outside.example>", recipient: "user@route.example" } }),
    ).toBe(1);
    expect(await p.prisma.delivery.count({ where: { emailId: first.id } })).toBe(1);

    // Same Message-ID, different body: not a duplicate.
    const changed = await deliver("user@route.example", raw.replace("Hello.", "Hello, changed."));
    expect(changed.id).not.toBe(first.id);
    // Same message, other recipient: its own Email.
    const other = await deliver("sales@route.example", raw);
    expect(other.id).not.toBe(first.id);
  });

  it("a retried or concurrently repeated job never creates a second Email or Delivery", async () => {
    const first = await deliver("user@route.example");
    const deps = {
      prisma: p.prisma,
      deliveryQueue: p.deliveryQueue,
      logger: createLogger("test", "silent"),
      resolver: async () => [],
      mtaHostname: "mx.mailroom.test",
      parser: p.parser,
    };
    const again = await processRecipient(deps, first.spoolRecipientId!);
    expect(again).toMatchObject({ outcome: "skipped" });

    // Two workers on the same pending recipient at once: one stores, the other does nothing.
    const r = await p.sendRaw(
      "sender@outside.example",
      ["user@route.example"],
      mail({ to: "user@route.example", id: "<race@outside.example>" }),
    );
    await p.engine!.worker.pause();
    try {
      const rcpt = await p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
      await p.prisma.spoolRecipient.update({ where: { id: rcpt.id }, data: { status: "pending" } });
      await Promise.all([processRecipient(deps, rcpt.id), processRecipient(deps, rcpt.id)]);
    } finally {
      p.engine!.worker.resume();
    }
    await p.processed(r.spoolId!);
    const emails = await p.prisma.email.findMany({
      where: { messageId: "<race@outside.example>" },
      include: { deliveries: true },
    });
    expect(emails).toHaveLength(1);
    expect(emails[0]!.deliveries).toHaveLength(1);
  });

  it("a message mailparser must not parse (1 MB header) is stored raw with PROCESSING_FAILED verdicts", async () => {
    const raw = mail({
      to: "sales@route.example",
      id: "<huge-header@outside.example>",
      subject: "huge",
      extra: `X-Junk: ${"j".repeat(1_048_576)}`,
    });
    const e = await deliver("sales@route.example", raw);
    expect(e).toMatchObject({
      messageId: "<huge-header@outside.example>",
      subject: "huge",
      fromAddress: "sender@outside.example",
      spfVerdict: "PROCESSING_FAILED",
      dkimVerdict: "PROCESSING_FAILED",
      dmarcVerdict: "PROCESSING_FAILED",
      spamVerdict: "PROCESSING_FAILED",
      textBody: "",
    });
    const spool = await p.prisma.spooledMessage.findUniqueOrThrow({
      where: { id: e.spoolId! },
      select: { size: true },
    });
    expect(spool.size).toBe(Buffer.byteLength(raw));
  });

  it("a message without Message-ID gets a generated one, the same when it is sent again (stored once)", async () => {
    const raw = mail({ to: "sales@route.example", subject: "no id" });
    const e = await deliver("sales@route.example", raw);
    expect(e.messageId).toMatch(/^<[0-9a-f]{32}@mx\.mailroom\.test>$/);
    // From the client's bytes, not from what is stored: our Received header (spool id, date)
    // differs on every copy, and a client retrying after a lost 250 must not get a second email.
    const again = await p.sendRaw("sender@outside.example", ["sales@route.example"], raw);
    expect(again.response).toMatch(/^250 /);
    await p.processed(again.spoolId!);
    expect(await p.prisma.email.count({ where: { spoolId: again.spoolId! } })).toBe(0);
    expect(await p.prisma.email.count({ where: { messageId: e.messageId } })).toBe(1);
  });

  it("a 25 MB attachment is stored whole", async () => {
    const size = 25 * 1024 * 1024;
    const raw = mimeWithAttachment({
      to: "sales@route.example",
      subject: "big one",
      messageId: "<big@outside.example>",
      filename: "big.zip",
      contentType: "application/zip",
      content: Buffer.alloc(size, 0x5a),
    });
    const r = await p.sendRaw("sender@outside.example", ["sales@route.example"], raw);
    expect(r.response).toMatch(/^250 /);
    await p.processed(r.spoolId!);
    const [row] = await p.prisma.$queryRaw<{ size: number; bytes: number; stored: boolean; filename: string }[]>`
      SELECT a.size, octet_length(a.content)::int AS bytes, a.stored, a.filename
      FROM attachments a JOIN emails e ON e.id = a."emailId" WHERE e."spoolId" = ${r.spoolId!}`;
    expect(row).toEqual({ size, bytes: size, stored: true, filename: "big.zip" });
  }, 300_000);

  it("a crash between storing the email and writing its attachment bytes is finished by a re-run or the sweeper", async () => {
    const raw = mimeWithAttachment({
      to: "sales@route.example",
      messageId: "<resume-1@outside.example>",
      filename: "data.bin",
      contentType: "application/octet-stream",
      content: Buffer.from("attachment bytes \u0000\u00ff"),
    });
    const e = await deliver("sales@route.example", raw);
    const rcpt = await p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: e.spoolId! } });
    expect(rcpt.status).toBe("stored");
    const bytes = async () =>
      (
        await p.prisma.$queryRaw<{ content: Uint8Array | null; stored: boolean }[]>`
          SELECT content, stored FROM attachments WHERE "emailId" = ${e.id}`
      )[0]!;
    const written = await bytes();
    expect(written.stored).toBe(true);
    expect(Buffer.from(written.content!).toString()).toBe("attachment bytes \u0000\u00ff");

    // What a crash right after the email's commit leaves behind.
    const crashed = async () => {
      await p.prisma.attachment.updateMany({ where: { emailId: e.id }, data: { content: null, stored: false } });
      await p.prisma.spoolRecipient.update({ where: { id: rcpt.id }, data: { status: "storing" } });
    };
    await crashed();
    const deps = {
      prisma: p.prisma,
      deliveryQueue: p.deliveryQueue,
      logger: createLogger("test", "silent"),
      resolver: async () => [],
      mtaHostname: "mx.mailroom.test",
      parser: p.parser,
    };
    expect(await processRecipient(deps, rcpt.id)).toMatchObject({ outcome: "skipped" });
    expect(await bytes()).toEqual(written);
    expect((await p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcpt.id } })).status).toBe("stored");

    // And when the job itself was lost with Redis: the sweeper queues `storing` recipients again.
    await crashed();
    const requeued = await sweepPendingRecipients(p.prisma, p.queue, deps.logger, { olderThanMs: 0 });
    expect(requeued).toBeGreaterThanOrEqual(1);
    await waitFor(async () => (await bytes()).stored, { what: "attachment bytes written again" });
    expect(await bytes()).toEqual(written);
    expect(await p.prisma.email.count({ where: { messageId: "<resume-1@outside.example>" } })).toBe(1);
  });
});
