import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack } from "@mailroom/stack";
import { type Seeded, seedAddress, seedDomain, sendOnce, simpleMessage, waitFor } from "@mailroom/testing";
import { type RawClient, rawClient } from "./slow-clients.ts";

/**
 * Issue 12 §5 over real SMTP, through the rule engine: postmaster (RFC 5321 §4.5.1) and ESMTP
 * parameters this server does not implement (RFC 5321 §4.1.1.11, `555 5.5.4`).
 */
describe("smtp-ingest: postmaster and unknown parameters", () => {
  let stack: Stack;
  let pm: Seeded;
  let host: Seeded;
  const open: RawClient[] = [];
  const from = "someone@sender.example";

  beforeAll(async () => {
    stack = await startStack({ services: { dispatcher: false } });
    // A hosted domain with one address and no catch-all: any other local part is refused.
    pm = await seedDomain(stack.prisma, "pm.example");
    await seedAddress(stack.prisma, pm, "support");
    // The stack's SMTP hostname (e2e/stack.ts) as a domain the operator hosts: whose postmaster a
    // bare `<postmaster>` is when SMTP_POSTMASTER_DOMAIN is not set.
    host = await seedDomain(stack.prisma, "mx.mailroom.test");
  }, 60_000);
  afterAll(async () => {
    for (const c of open) c.socket.destroy();
    await stack?.close();
  });

  const storedFor = (recipient: string) =>
    waitFor(() => stack.prisma.email.findFirst({ where: { recipient } }), {
      timeoutMs: 60_000,
      what: `the email for ${recipient}`,
    });

  /** A raw session greeted and past EHLO (for what nodemailer will not send). */
  async function session(): Promise<RawClient> {
    const c = rawClient(stack.smtpPort);
    open.push(c);
    expect(await c.reply()).toMatch(/^220 /);
    c.write("EHLO client.example\r\n");
    expect(await c.reply()).toMatch(/^250 /);
    return c;
  }

  it("postmaster@<hosted domain> is accepted without an address or catch-all and stored for its account", async () => {
    const to = "PostMaster@pm.example";
    const r = await sendOnce({ port: stack.smtpPort }, { from, to: [to] }, simpleMessage(from, to, "to postmaster"));
    expect(r.code).toBe(250);
    const email = await storedFor("postmaster@pm.example");
    expect(email).toMatchObject({ accountId: pm.accountId, domainId: pm.domainId, addressId: null });
    expect(email.subject).toBe("to postmaster");

    // Any other unknown local part of the same domain is still refused.
    const other = await sendOnce(
      { port: stack.smtpPort },
      { from, to: ["nobody@pm.example"] },
      simpleMessage(from, "nobody@pm.example"),
    );
    expect(other.rejectedErrors[0]?.response).toMatch(/^550 5\.1\.1 /);
  }, 90_000);

  it("a bare RCPT TO:<postmaster> is accepted and stored for the account of the server's own domain", async () => {
    const c = await session();
    c.write(`MAIL FROM:<${from}>\r\n`);
    expect(await c.reply()).toMatch(/^250 2\.1\.0 /);
    c.write("RCPT TO:<Postmaster>\r\n");
    expect(await c.reply()).toMatch(/^250 2\.1\.5 /);
    c.write("DATA\r\n");
    expect(await c.reply()).toMatch(/^354 /);
    c.write(`${simpleMessage(from, "postmaster", "bare postmaster")}\r\n.\r\n`);
    expect(await c.reply()).toMatch(/^250 2\.0\.0 /);
    const email = await storedFor("postmaster@mx.mailroom.test");
    expect(email).toMatchObject({ accountId: host.accountId, domainId: host.domainId, addressId: null });
    expect(email.subject).toBe("bare postmaster");
  }, 90_000);

  it("answers 555 5.5.4 to a MAIL FROM parameter it does not implement, and takes the ones it advertises", async () => {
    const c = await session();
    c.write(`MAIL FROM:<${from}> RET=HDRS\r\n`); // DSN is not offered
    expect(await c.reply()).toMatch(/^555 5\.5\.4 MAIL FROM parameter RET not implemented/);
    c.write(`MAIL FROM:<${from}> X-MADE-UP=1\r\n`);
    expect(await c.reply()).toMatch(/^555 5\.5\.4 MAIL FROM parameter X-MADE-UP not implemented/);
    c.write(`MAIL FROM:<${from}> SIZE=100 BODY=8BITMIME\r\n`);
    expect(await c.reply()).toMatch(/^250 2\.1\.0 /);
  });

  it("answers 555 5.5.4 to a RCPT TO parameter (it implements none) and still takes the plain recipient", async () => {
    const c = await session();
    c.write(`MAIL FROM:<${from}>\r\n`);
    expect(await c.reply()).toMatch(/^250 2\.1\.0 /);
    c.write("RCPT TO:<support@pm.example> NOTIFY=NEVER\r\n");
    expect(await c.reply()).toMatch(/^555 5\.5\.4 RCPT TO parameter NOTIFY not implemented/);
    c.write("RCPT TO:<support@pm.example>\r\n");
    expect(await c.reply()).toMatch(/^250 2\.1\.5 /);
  });
});
