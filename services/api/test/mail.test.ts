import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { http, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";

const V = "/api/v1";

/**
 * Reads over mail that really arrived: SMTP (nodemailer) → spool → rule engine → the API's raw,
 * attachment, thread and search views of it.
 */
describe("reading real mail: raw, attachments, threads, search", () => {
  let stack: Stack;
  let acct: TestAccount;
  let domainId: string;
  let first: any;
  let reply: any;
  const pdf = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x2d, 0x31, 0x2e, 0x34, 0x0a, 0x00, 0xff, 0xfe, 0x80, 0x81]);

  const send = async (msg: nodemailer.SendMailOptions) => {
    const t = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true });
    const info = await t.sendMail(msg);
    t.close();
    return info;
  };
  const arrived = (messageId: string) =>
    waitFor(
      async () => {
        const r = await acct.api("GET", `${V}/emails?limit=100`);
        const hit = r.body.data.find((e: any) => e.messageId === messageId);
        return hit ? (await acct.api("GET", `${V}/emails/${hit.id}`)).body : undefined;
      },
      { what: `email ${messageId}` },
    );

  beforeAll(async () => {
    stack = await startStack({ services: { dispatcher: false } });
    acct = await stack.account();
    domainId = (await acct.api("POST", `${V}/domains`, { domain: "reads.example.com" })).body.id;
    await stack.admin("domains", "verify", "--domain", "reads.example.com", "--force");
    await acct.api("POST", `${V}/addresses`, { domainId, localPart: "desk" });

    await send({
      from: "Bob Builder <bob@builders.example>",
      to: "desk@reads.example.com",
      subject: "Scaffolding quote",
      text: "Here is the scaffolding quote you asked for.",
      messageId: "<quote-1@builders.example>",
      attachments: [
        { filename: "quote.pdf", content: pdf, contentType: "application/pdf" },
        { filename: "naïve résumé.txt", content: "plain words\n", contentType: "text/plain" },
      ],
    });
    first = await arrived("<quote-1@builders.example>");
    await send({
      from: "Bob Builder <bob@builders.example>",
      to: "desk@reads.example.com",
      subject: "Re: Scaffolding quote",
      text: "Following up on the quote.",
      messageId: "<quote-2@builders.example>",
      inReplyTo: "<quote-1@builders.example>",
      references: ["<quote-1@builders.example>"],
    });
    reply = await arrived("<quote-2@builders.example>");
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("GET /emails/{id}/raw returns the message exactly as accepted, as message/rfc822", async () => {
    const r = await http(stack, "GET", `${V}/emails/${first.id}/raw`, { key: acct.key });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("message/rfc822");
    const spool = await stack.prisma.email.findUniqueOrThrow({ where: { id: first.id }, include: { spool: true } });
    expect(r.bytes.equals(Buffer.from(spool.spool?.raw ?? []))).toBe(true);
    const text = r.bytes.toString("latin1");
    // Our trace header first (the client's bytes follow it unchanged), naming what the view shows.
    const spoolId = spool.spoolId as string;
    expect(text.startsWith(`Received: from ${first.received.helo} (`)).toBe(true);
    expect(text).toMatch(/^[^\r\n]* \[127\.0\.0\.1\]\)\r\n/);
    expect(text).toContain(
      `\r\n\tby mx.mailroom.test (mailroom) with ESMTP id ${spoolId}\r\n\tfor <desk@reads.example.com>; `,
    );
    expect(first.received).toEqual({ clientIp: "127.0.0.1", helo: expect.any(String), tls: null });
    expect(text).toContain("Message-ID: <quote-1@builders.example>");
    expect(text).toContain("Subject: Scaffolding quote");
    // A read-only key may read it; HEAD works.
    const ro = String((await stack.admin("keys", "create", "--account", acct.accountId)).key);
    expect((await http(stack, "HEAD", `${V}/emails/${first.id}/raw`, { key: ro })).status).toBe(200);
  });

  it("GET /emails/{id}/attachments/{n} returns the bytes with Content-Type and Content-Disposition", async () => {
    expect(first.attachments.map((a: any) => [a.filename, a.contentType, a.size, a.stored])).toEqual([
      ["quote.pdf", "application/pdf", pdf.length, true],
      ["naïve résumé.txt", "text/plain", 12, true],
    ]);
    expect(first.attachments[0].url).toMatch(new RegExp(`/api/v1/emails/${first.id}/attachments/0$`));
    const a0 = await http(stack, "GET", `${V}/emails/${first.id}/attachments/0`, { key: acct.key });
    expect(a0.status).toBe(200);
    expect(a0.bytes.equals(pdf)).toBe(true);
    expect(a0.headers.get("content-type")).toBe("application/pdf");
    expect(a0.headers.get("content-disposition")).toBe("attachment; filename=quote.pdf");
    expect(a0.headers.get("x-content-type-options")).toBe("nosniff");
    const a1 = await http(stack, "GET", `${V}/emails/${first.id}/attachments/1`, { key: acct.key });
    expect(a1.bytes.toString()).toBe("plain words\n");
    expect(a1.headers.get("content-disposition")).toBe(
      "attachment; filename=\"na?ve r?sum?.txt\"; filename*=UTF-8''na%C3%AFve%20r%C3%A9sum%C3%A9.txt",
    );
    expect(await http(stack, "GET", `${V}/emails/${first.id}/attachments/2`, { key: acct.key })).toMatchObject({
      status: 404,
      body: { error: "Email has no attachment 2" },
    });
    expect(await http(stack, "GET", `${V}/emails/${first.id}/attachments/x`, { key: acct.key })).toMatchObject({
      status: 400,
      body: { error: "n: must be the attachment's position (0, 1, …)" },
    });
  });

  it("an attachment that was not stored → 404 with a clear error", async () => {
    await stack.prisma.attachment.update({
      where: { emailId_index: { emailId: first.id, index: 1 } },
      data: { stored: false, content: null },
    });
    const r = await http(stack, "GET", `${V}/emails/${first.id}/attachments/1`, { key: acct.key });
    expect(r).toMatchObject({
      status: 404,
      body: { error: "Attachment 1 (naïve résumé.txt) was not stored and cannot be downloaded" },
    });
    const e = await acct.api("GET", `${V}/emails/${first.id}`);
    expect(e.body.attachments[1]).toMatchObject({ stored: false, url: null });
  });

  it("raw is 404 when no raw message is kept", async () => {
    await stack.prisma.email.update({ where: { id: reply.id }, data: { spoolId: null } });
    expect(await http(stack, "GET", `${V}/emails/${reply.id}/raw`, { key: acct.key })).toMatchObject({
      status: 404,
      body: { error: "The raw message of this email is not available" },
    });
  });

  it("threads: the reply joins the thread; GET /threads and GET /threads/{id}", async () => {
    expect(reply.threadId).toBe(first.threadId);
    const t = await acct.api("GET", `${V}/threads/${first.threadId}`);
    expect(t.status).toBe(200);
    expect(t.body.threadId).toBe(first.threadId);
    expect(t.body.data.map((e: any) => e.id)).toEqual([first.id, reply.id]); // oldest first
    expect(t.body.data[0]).toEqual({
      id: first.id,
      direction: "inbound",
      threadId: first.threadId,
      messageId: "<quote-1@builders.example>",
      fromAddress: "bob@builders.example",
      toAddresses: ["desk@reads.example.com"],
      subject: "Scaffolding quote",
      spamVerdict: first.spamVerdict,
      attachmentCount: 2,
      receivedAt: first.receivedAt,
    });
    const list = await acct.api("GET", `${V}/threads`);
    expect(list.body.data).toEqual([
      expect.objectContaining({ id: first.threadId, messageCount: 2, lastMessageAt: reply.receivedAt }),
    ]);
    expect((await acct.api("GET", `${V}/threads/thr_doesnotexist00000000`)).status).toBe(404);
  });

  it("search finds real mail by subject, sender and body", async () => {
    const ids = async (q: string) =>
      (await acct.api("GET", `${V}/emails?q=${encodeURIComponent(q)}`)).body.data.map((e: any) => e.id);
    expect(await ids("scaffolding")).toEqual([reply.id, first.id]);
    expect(await ids("following")).toEqual([reply.id]);
    expect(await ids("builders.example")).toEqual([reply.id, first.id]);
    expect(await ids("bob")).toEqual([reply.id, first.id]);
  });
});
