import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack } from "@mailroom/stack";
import type { Receiver } from "@mailroom/testing";
import { seedAddress, seedDomain, seedEndpoint, sendOnce, startReceiver, waitFor } from "@mailroom/testing";
import { havePostfix, type PostfixRelay, startPostfixRelay } from "./postfix.ts";

if (!havePostfix()) {
  console.warn("postfix is not installed (bash scripts/install-mail-tools.sh postfix): Postfix relay test skipped");
}

/**
 * Done-when of issue 4: Debian's Postfix, relaying to the ingest port, delivers a message that ends
 * up stored and delivered to a webhook; a message to an unknown recipient is bounced by Postfix
 * with our 5.1.1, and the bounce itself comes back to a mailbox we host.
 */
(havePostfix() ? describe : describe.skip)("Postfix relaying to the ingest port", () => {
  let stack: Stack;
  let receiver: Receiver;
  let relay: PostfixRelay;

  beforeAll(async () => {
    stack = await startStack();
    receiver = await startReceiver();
    const d = await seedDomain(stack.prisma, "relay.example");
    const ep = await seedEndpoint(stack.prisma, d.accountId, `${receiver.url}/hook`);
    await seedAddress(stack.prisma, d, "support", { endpointId: ep });
    // Where the sender's bounces go: a catch-all we host, so the DSN can be read back.
    await seedDomain(stack.prisma, "bounces.example", { catchAll: true });
    relay = await startPostfixRelay({ domains: ["relay.example", "bounces.example"], ingestPort: stack.smtpPort });
  }, 60_000);
  afterAll(async () => {
    await relay?.stop();
    await receiver?.close();
    await stack?.close();
  });

  const submit = (to: string, id: string) =>
    sendOnce(
      { port: relay.port },
      { from: "sender@bounces.example", to: [to] },
      `From: Sender <sender@bounces.example>\r\nTo: ${to}\r\nSubject: via postfix ${id}\r\nMessage-ID: <${id}@bounces.example>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\nRelayed by Postfix.\r\n`,
    );

  it("a relayed message is stored and delivered", async () => {
    const r = await submit("support@relay.example", "pf-ok");
    expect(r.response).toMatch(/^250 /); // Postfix queued it
    const email = await waitFor(
      () =>
        stack.prisma.email.findFirst({
          where: { messageId: "<pf-ok@bounces.example>" },
          include: { deliveries: true },
        }),
      { what: "the relayed email", timeoutMs: 30_000 },
    );
    expect(email).toMatchObject({
      recipient: "support@relay.example",
      subject: "via postfix pf-ok",
      fromAddress: "sender@bounces.example",
    });
    // Postfix added its Received header: the message really came through it.
    expect(email.headers).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: "received", value: expect.stringContaining("relay.mailroom.test") }),
      ]),
    );
    await waitFor(() => stack.prisma.delivery.findFirst({ where: { emailId: email.id, status: "delivered" } }), {
      what: "the webhook delivery",
    });
    expect(receiver.requests.some((q) => q.body.toString("utf8").includes("pf-ok@bounces.example"))).toBe(true);
    await waitFor(async () => /status=sent \(250 2\.0\.0 Ok: queued as spl_/.test(relay.log()), {
      what: "postfix status=sent",
    });
  }, 60_000);

  it("an unknown recipient is bounced by Postfix with 5.1.1", async () => {
    const r = await submit("nobody@relay.example", "pf-unknown");
    expect(r.response).toMatch(/^250 /); // Postfix accepts, then our MX refuses it
    await waitFor(
      async () => /to=<nobody@relay\.example>.*dsn=5\.1\.1, status=bounced .*550 5\.1\.1/.test(relay.log()),
      {
        what: "postfix to bounce with 5.1.1",
        timeoutMs: 30_000,
      },
    );
    // The non-delivery report reaches the sender's mailbox (hosted here) and names 5.1.1.
    const dsn = await waitFor(
      () =>
        stack.prisma.email.findFirst({
          where: { recipient: "sender@bounces.example", subject: { contains: "Undelivered" } },
        }),
      { what: "the bounce message", timeoutMs: 30_000 },
    );
    expect(dsn.textBody).toContain("nobody@relay.example");
    expect(dsn.textBody).toMatch(/550 5\.1\.1/);
    expect(await stack.prisma.email.count({ where: { messageId: "<pf-unknown@bounces.example>" } })).toBe(0);
  }, 60_000);
});
