import { promises as dns } from "node:dns";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId } from "@mailroom/db";
import { enqueueDeliveryAttempt, queueKeyFor } from "@mailroom/deliveries";
import { createLogger } from "@mailroom/log";
import { enqueue } from "@mailroom/queues";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type DnsServer, startDnsServer, startRelay, type TestRelay, waitFor } from "@mailroom/testing";
import { dkimVerify } from "mailauth/lib/dkim/verify.js";
import { simpleParser } from "mailparser";
import nodemailer from "nodemailer";
import { attemptForward, createRelay, loadSenderEnv, type Relay, sweepOutbound } from "../src/index.ts";

/**
 * Outbound mail through every real piece: the API stores and queues it, the sender hands it to a real
 * SMTP relay (smtp-server) DKIM-signed, mailauth verifies the signature against a loopback DNS server
 * publishing the key the way the operator would, and an answer sent through the real SMTP ingest
 * lands in the same thread.
 */
describe("outbound mail: replies, new messages, relay failures", () => {
  let stack: Stack;
  let relay: TestRelay;
  let relayClient: Relay;
  let dnsServer: DnsServer;
  let acct: TestAccount;
  let domain: { id: string; domain: string; dkimSelector: string; dkimRecord: { name: string; value: string } };

  const smtpIn = () =>
    nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true });

  /** Sends an inbound message through the ingest and waits until the rule engine stored it. */
  async function receive(mail: Parameters<ReturnType<typeof smtpIn>["sendMail"]>[0] & { messageId: string }) {
    await smtpIn().sendMail(mail);
    return waitFor(
      () => stack.prisma.email.findFirst({ where: { messageId: mail.messageId, accountId: acct.accountId } }),
      {
        what: `inbound ${mail.messageId}`,
      },
    );
  }

  /** A message to the address with no destination of its own (the tests below add deliveries by hand). */
  const toSupport = (tag: string) => ({
    from: `${tag}@sender.example`,
    to: "support@outbound-example.com",
    subject: tag,
    text: tag,
    messageId: `<${tag}@sender.example>`,
  });
  const relayed = (messageId: string) => relay.messages.filter((m) => m.raw.toString().includes(messageId));

  beforeAll(async () => {
    // The dispatcher runs too: it must leave email-destination deliveries to the forwarder.
    relay = await startRelay();
    // The sender as main.ts starts it (startSenderService), on the stack's database and queues.
    stack = await startStack({ outbound: { relayUrl: relay.url, maxAttempts: 3, backoffUnitMs: 20 } });
    dnsServer = await startDnsServer();
    // Only for the test that runs two forward attempts at once by hand.
    relayClient = createRelay({ url: relay.url, timeoutMs: 5_000 });
    acct = await stack.account();

    const created = await acct.api("POST", "/api/v1/domains", { domain: "outbound-example.com" });
    expect(created.status).toBe(201);
    await stack.admin("domains", "verify", "--domain", "outbound-example.com", "--force");
    const got = await acct.api("GET", `/api/v1/domains/${created.body.id}`);
    domain = got.body;
    // What the account publishes (the CNAME) and what the operator publishes (the TXT at its target).
    dnsServer.set(`${domain.dkimSelector}._domainkey.outbound-example.com`, "CNAME", [domain.dkimRecord.name]);
    dnsServer.set(domain.dkimRecord.name, "TXT", [domain.dkimRecord.value]);
    const addr = await acct.api("POST", "/api/v1/addresses", { domainId: domain.id, localPart: "support" });
    expect(addr.status).toBe(201);
  });

  afterAll(async () => {
    relayClient?.close();
    await relay?.close();
    await dnsServer?.close();
    await stack?.close();
  });

  it("exposes the DKIM selector and public key on GET /domains/{id}, never the private key", async () => {
    const got = await acct.api("GET", `/api/v1/domains/${domain.id}`);
    expect(got.status).toBe(200);
    expect(got.body.dkimSelector).toBe(got.body.dkimTokens[0]);
    expect(got.body.dkimPublicKey).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(got.body.dkimRecord).toEqual({
      type: "TXT",
      name: `${got.body.dkimTokens[0]}.dkim.mailroom.test`,
      value: `v=DKIM1; k=rsa; p=${got.body.dkimPublicKey}`,
    });
    // The selector's CNAME, which the account publishes anyway, points at the TXT's name.
    expect(got.body.dnsRecords).toContainEqual({
      type: "CNAME",
      name: `${got.body.dkimSelector}._domainkey.outbound-example.com`,
      value: got.body.dkimRecord.name,
    });
    expect(JSON.stringify(got.body)).not.toMatch(/PRIVATE KEY|dkimPrivateKey/);
  });

  it("replies DKIM-signed and threaded, and an inbound answer joins the same thread", async () => {
    const original = await receive({
      from: "Alice <alice@sender.example>",
      to: ["support@outbound-example.com", "carol@third.example"],
      cc: "bob@other.example",
      subject: "Invoice question",
      text: "Where is my invoice?",
      messageId: "<q1@sender.example>",
      references: "<root@sender.example>",
    });

    const res = await acct.api("POST", `/api/v1/emails/${original.id}/reply`, {
      text: "Attached.",
      html: "<p>Attached.</p>",
      replyAll: true,
      cc: ["dave@fourth.example"],
      attachments: [
        { filename: "invoice.txt", contentType: "text/plain", content: Buffer.from("total: 42\n").toString("base64") },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      direction: "outbound",
      threadId: original.threadId,
      inReplyTo: "<q1@sender.example>",
      fromAddress: "support@outbound-example.com",
      toAddresses: ["alice@sender.example", "carol@third.example"],
      ccAddresses: ["bob@other.example", "dave@fourth.example"],
      subject: "Re: Invoice question",
      spamVerdict: null,
      attachments: [{ filename: "invoice.txt", contentType: "text/plain", size: 10, stored: true }],
      send: { status: "queued", attempts: 0, lastReply: null, sentAt: null },
      received: null,
    });
    expect(res.body.messageId).toMatch(/^<[\w-]+@outbound-example\.com>$/);

    const sent = await waitFor(
      async () => {
        const e = await acct.api("GET", `/api/v1/emails/${res.body.id}`);
        return e.body.send?.status === "sent" ? e.body : null;
      },
      { what: "the reply to be sent" },
    );
    expect(sent.send.attempts).toBe(1);
    expect(sent.send.lastReply).toMatch(/^250 .*Ok: relayed/);

    const [msg, ...more] = relayed(res.body.messageId);
    expect(more).toHaveLength(0);
    expect(msg!.mailFrom).toBe("support@outbound-example.com");
    expect([...msg!.rcptTo].sort()).toEqual(
      ["alice@sender.example", "bob@other.example", "carol@third.example", "dave@fourth.example"].sort(),
    );
    const parsed = await simpleParser(msg!.raw);
    expect(parsed.messageId).toBe(res.body.messageId);
    expect(parsed.inReplyTo).toBe("<q1@sender.example>");
    expect(parsed.references).toEqual(["<root@sender.example>", "<q1@sender.example>"]);
    expect(parsed.subject).toBe("Re: Invoice question");
    expect(parsed.from?.value[0]?.address).toBe("support@outbound-example.com");
    expect(parsed.text?.trim()).toBe("Attached.");
    expect(parsed.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([["invoice.txt", "total: 42\n"]]);

    // DKIM: verified by mailauth against the loopback DNS server, through the selector's CNAME.
    const resolver = new dns.Resolver();
    resolver.setServers([dnsServer.server]);
    const verified = await dkimVerify(msg!.raw, {
      resolver: ((name: string, type: string) => resolver.resolve(name, type)) as never,
    });
    expect(verified.results).toHaveLength(1);
    expect(verified.results[0]).toMatchObject({
      signingDomain: "outbound-example.com",
      selector: domain.dkimSelector,
      status: { result: "pass" },
    });

    // The answer names the reply only in In-Reply-To and lands in the same thread.
    const answer = await receive({
      from: "alice@sender.example",
      to: "support@outbound-example.com",
      subject: "Re: Invoice question",
      text: "Thanks!",
      messageId: "<a1@sender.example>",
      inReplyTo: res.body.messageId,
    });
    expect(answer.threadId).toBe(original.threadId);
    const thread = await acct.api("GET", `/api/v1/threads/${original.threadId}`);
    expect(thread.status).toBe(200);
    expect(thread.body.data.map((e: { direction: string }) => e.direction)).toEqual(["inbound", "outbound", "inbound"]);
  });

  it("sends a new message from an owned address in a new thread, and validates the request", async () => {
    const res = await acct.api("POST", "/api/v1/emails", {
      from: "Support@Outbound-Example.com",
      fromName: "Support Team",
      to: "erin@fifth.example",
      subject: "Welcome",
      text: "Hello Erin",
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      direction: "outbound",
      fromAddress: "support@outbound-example.com",
      inReplyTo: null,
    });
    const thread = await acct.api("GET", `/api/v1/threads/${res.body.threadId}`);
    expect(thread.body.data).toHaveLength(1);
    await waitFor(async () => relayed(res.body.messageId)[0], { what: "the new message at the relay" });
    const parsed = await simpleParser(relayed(res.body.messageId)[0]!.raw);
    expect(parsed.from?.value[0]).toEqual({ name: "Support Team", address: "support@outbound-example.com" });
    expect(parsed.headers.has("in-reply-to")).toBe(false);

    const bad = async (body: unknown) => acct.api("POST", "/api/v1/emails", body);
    const base = { from: "support@outbound-example.com", to: "x@y.example", subject: "s", text: "t" };
    expect(await bad({ ...base, text: undefined })).toMatchObject({
      status: 400,
      body: { error: "text: text or html is required" },
    });
    expect((await bad({ ...base, to: "not-an-address" })).body.error).toMatch(/^to: /);
    expect((await bad({ ...base, from: "nobody@outbound-example.com" })).body.error).toMatch(
      /^from: .* not an active address/,
    );
    expect((await bad({ ...base, from: "me@unknown-example.com" })).body.error).toMatch(/^from: /);
    expect((await bad({ ...base, subject: "a\r\nBcc: evil@x.example" })).body.error).toMatch(/^subject: /);
    expect((await bad({ ...base, attachments: [{ filename: "a.bin", content: "***" }] })).body.error).toMatch(
      /^attachments\.0\.content: must be base64/,
    );
    const tooBig = Buffer.alloc(10 * 1024 * 1024 + 1).toString("base64");
    const big = await bad({ ...base, attachments: [{ filename: "big.bin", content: tooBig }] });
    expect(big.status).toBe(413);
    expect(big.body.error).toMatch(/^attachments: /);

    // A domain that is not verified cannot send.
    const pending = await acct.api("POST", "/api/v1/domains", { domain: "pending-example.com" });
    await acct.api("POST", "/api/v1/addresses", { domainId: pending.body.id, localPart: "hi" });
    const refused = await bad({ ...base, from: "hi@pending-example.com" });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/^from: pending-example\.com is not verified/);

    // Read-only keys cannot send.
    const reader = await stack.account({ scope: "read" });
    expect((await reader.api("POST", "/api/v1/emails", base)).status).toBe(403);
  });

  it("is idempotent with Idempotency-Key: same response, one message at the relay", async () => {
    const body = {
      from: "support@outbound-example.com",
      to: "frank@sixth.example",
      subject: "Once",
      text: "only once",
    };
    const call = (b: unknown) =>
      fetch(`${stack.apiUrl}/api/v1/emails`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${acct.key}`,
          "content-type": "application/json",
          "idempotency-key": "order-77",
        },
        body: JSON.stringify(b),
      });
    const [a, b] = await Promise.all([call(body), call(body)]);
    const c = await call(body);
    const [first, second, third] = (await Promise.all([a.json(), b.json(), c.json()])) as {
      id: string;
      messageId: string;
    }[];
    const bodies = [first!, second!, third!];
    expect([a.status, b.status, c.status]).toEqual([201, 201, 201]);
    expect(bodies[1]).toEqual(bodies[0]);
    expect(bodies[2]).toEqual(bodies[0]);
    expect([a, b, c].filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(2);
    expect(await stack.prisma.email.count({ where: { accountId: acct.accountId, subject: "Once" } })).toBe(1);

    await waitFor(
      async () => (await stack.prisma.email.findUnique({ where: { id: first!.id } }))?.sendStatus === "sent",
      { what: "the idempotent message to be sent" },
    );
    expect(relayed(first!.messageId)).toHaveLength(1);

    const other = await call({ ...body, text: "something else" });
    expect(other.status).toBe(409);
    expect(((await other.json()) as { error: string }).error).toMatch(/^Idempotency-Key: /);
  });

  it("retries a 451 with backoff and ends failed with the relay's reply; a 550 fails at once", async () => {
    const send = (to: string) =>
      acct.api("POST", "/api/v1/emails", { from: "support@outbound-example.com", to, subject: "Try", text: "x" });
    const temp = await send("tempfail@seventh.example");
    const perm = await send("permfail@seventh.example");
    expect([temp.status, perm.status]).toEqual([201, 201]);

    const tempDone = await waitFor(
      async () => {
        const e = await acct.api("GET", `/api/v1/emails/${temp.body.id}`);
        return e.body.send.status === "failed" ? e.body : null;
      },
      { what: "the 451 message to fail" },
    );
    expect(tempDone.send).toMatchObject({ attempts: 3, sentAt: null });
    expect(tempDone.send.lastReply).toMatch(/451 .*Try again later/);
    expect(relay.rcptSeen.filter((r) => r === "tempfail@seventh.example")).toHaveLength(3);

    const permDone = await waitFor(
      async () => {
        const e = await acct.api("GET", `/api/v1/emails/${perm.body.id}`);
        return e.body.send.status === "failed" ? e.body : null;
      },
      { what: "the 550 message to fail" },
    );
    expect(permDone.send.attempts).toBe(1);
    expect(permDone.send.lastReply).toMatch(/550 .*No such user/);
    expect(relay.rcptSeen.filter((r) => r === "permfail@seventh.example")).toHaveLength(1);
  });
  it("the sweeper re-queues an attempt whose worker died mid-send (lease expired)", async () => {
    const res = await acct.api("POST", "/api/v1/emails", {
      from: "support@outbound-example.com",
      to: "gina@eighth.example",
      subject: "Crash",
      text: "x",
    });
    await waitFor(
      async () => (await stack.prisma.email.findUnique({ where: { id: res.body.id } }))?.sendStatus === "sent",
      {
        what: "first send",
      },
    );
    // As a worker that claimed attempt 2 and died would leave it: `sending`, lease already over.
    await stack.prisma.email.update({
      where: { id: res.body.id },
      data: { sendStatus: "sending", sendAttempts: 2, sendNextAttemptAt: new Date(Date.now() - 1_000) },
    });
    const logger = createLogger("test", "silent");
    expect(await sweepOutbound(stack.prisma, stack.outboundQueue, logger, { graceMs: 0 })).toBe(1);
    const done = await waitFor(
      async () => {
        const e = await stack.prisma.email.findUnique({ where: { id: res.body.id } });
        return e?.sendStatus === "sent" && e.sendAttempts === 3 ? e : null;
      },
      { what: "the swept attempt to be sent" },
    );
    expect(done.sendLastReply).toMatch(/^250 /);
    // At-least-once: the relay got the same message (same Message-ID) again.
    expect(relayed(res.body.messageId)).toHaveLength(2);
    expect(await sweepOutbound(stack.prisma, stack.outboundQueue, logger, { graceMs: 0 })).toBe(0);
  });
  it("forwards mail routed to an email destination as a DKIM-signed attachment, never in a loop", async () => {
    const bad = await acct.api("POST", "/api/v1/endpoints", { type: "email", url: "https://x.example/hook" });
    expect(bad).toMatchObject({ status: 400, body: { error: "url: must be mailto:<address> for type email" } });
    const ep = await acct.api("POST", "/api/v1/endpoints", { type: "email", url: "mailto:Inbox@Archive.example" });
    expect(ep.status).toBe(201);
    expect(ep.body).toMatchObject({
      type: "email",
      url: "mailto:inbox@archive.example",
      name: "inbox@archive.example",
    });
    expect((await acct.api("GET", `/api/v1/endpoints/${ep.body.id}`)).body.type).toBe("email");
    const addr = await acct.api("POST", "/api/v1/addresses", {
      domainId: domain.id,
      localPart: "sales",
      endpointId: ep.body.id,
    });
    expect(addr.status).toBe(201);

    const original = await receive({
      from: "Hank <hank@h.example>",
      to: "sales@outbound-example.com",
      subject: "Offer",
      text: "Buy now",
      messageId: "<fw1@h.example>",
    });
    const delivery = await waitFor(
      () =>
        stack.prisma.delivery.findFirst({
          where: { emailId: original.id, status: { in: ["delivered", "dead"] } },
          include: { attempts: true },
        }),
      { what: "the forward to finish" },
    );
    expect(delivery).toMatchObject({ status: "delivered", attemptCount: 1, lastStatusCode: 250, lastError: null });
    expect(delivery.attempts[0]?.responseBody).toMatch(/^250 /);

    const msg = relay.messages.find((m) => m.rcptTo.includes("inbox@archive.example"));
    expect(msg?.mailFrom).toBe("sales@outbound-example.com");
    const parsed = await simpleParser(msg!.raw);
    expect(parsed.subject).toBe("Fwd: Offer");
    expect(parsed.from?.value[0]?.address).toBe("sales@outbound-example.com");
    expect(parsed.replyTo?.value[0]?.address).toBe("hank@h.example");
    expect(parsed.headers.get("x-service-forwarded-by")).toBe(delivery.id);
    const raw = msg!.raw.toString();
    expect(raw).toMatch(/Content-Type: message\/rfc822/i);
    expect(raw).toContain("Message-ID: <fw1@h.example>");
    const resolver = new dns.Resolver();
    resolver.setServers([dnsServer.server]);
    const verified = await dkimVerify(msg!.raw, {
      resolver: ((name: string, type: string) => resolver.resolve(name, type)) as never,
    });
    expect(verified.results[0]).toMatchObject({ signingDomain: "outbound-example.com", status: { result: "pass" } });

    // The forward coming back to a forwarding address is stored but not forwarded again.
    await smtpIn().sendMail({
      envelope: { from: "sales@outbound-example.com", to: ["sales@outbound-example.com"] },
      raw: msg!.raw,
    });
    const back = await waitFor(() =>
      stack.prisma.email.findFirst({ where: { messageId: parsed.messageId as string, accountId: acct.accountId } }),
    );
    const looped = await waitFor(
      () => stack.prisma.delivery.findFirst({ where: { emailId: back.id, status: "dead" } }),
      {
        what: "the looped forward to be refused",
      },
    );
    expect(looped.lastError).toMatch(/loop/);
    expect(relay.messages.filter((m) => m.rcptTo.includes("inbox@archive.example"))).toHaveLength(1);
  });

  it("forwards from the forward queue with no polling; a webhook delivery never reaches the forward worker", async () => {
    // The setting is gone: an old FORWARD_POLL_MS is ignored like any unknown variable.
    expect(Object.keys(loadSenderEnv({ FORWARD_POLL_MS: "50" }))).not.toContain("FORWARD_POLL_MS");
    const email = await acct.api("POST", "/api/v1/endpoints", { type: "email", url: "mailto:queue@archive.example" });
    const idle = await acct.api("POST", "/api/v1/endpoints", { type: "email", url: "mailto:idle@archive.example" });
    const hook = await acct.api("POST", "/api/v1/endpoints", { url: "http://127.0.0.1:9/never" });
    expect([email.status, idle.status, hook.status]).toEqual([201, 201, 201]);
    const original = await receive(toSupport("fwq1"));
    const row = (endpointId: string) => ({
      id: newId("delivery"),
      accountId: acct.accountId,
      emailId: original.id,
      endpointId,
      maxAttempts: 3,
      nextAttemptAt: new Date(),
    });
    // Both due now; only `queued` gets a job. A poller would forward the older `unqueued` first.
    const unqueued = row(idle.body.id);
    const queued = row(email.body.id);
    const webhook = row(hook.body.id);
    for (const d of [unqueued, queued, webhook]) await stack.prisma.delivery.create({ data: d });
    // Routed by the endpoint type: the email delivery's job goes to `forward`, the webhook's to `delivery`.
    expect([queueKeyFor("email"), queueKeyFor("webhook"), queueKeyFor("slack")]).toEqual([
      "forward",
      "delivery",
      "delivery",
    ]);
    await enqueueDeliveryAttempt({ forward: stack.forwardQueue }, { id: queued.id, endpointType: "email" }, 1);
    const done = await waitFor(
      () => stack.prisma.delivery.findFirst({ where: { id: queued.id, status: "delivered" } }),
      { what: "the queued forward" },
    );
    expect(done.attemptCount).toBe(1);
    expect(relay.messages.filter((m) => m.rcptTo.includes("queue@archive.example"))).toHaveLength(1);
    expect(relay.messages.filter((m) => m.rcptTo.includes("idle@archive.example"))).toHaveLength(0);
    expect(await stack.prisma.delivery.findUniqueOrThrow({ where: { id: unqueued.id } })).toMatchObject({
      status: "pending",
      attemptCount: 0,
    });

    // A webhook delivery's id put on the forward queue by mistake: the forward worker claims only email
    // destinations, so the job ends without an attempt and the row is untouched.
    const job = await enqueue(stack.forwardQueue, "forward", { deliveryId: webhook.id }, { jobId: `${webhook.id}.1` });
    await waitFor(async () => (await job.getState()) === "completed" || (await job.getState()) === "unknown", {
      what: "the misrouted job to finish",
    });
    expect(await stack.prisma.delivery.findUniqueOrThrow({ where: { id: webhook.id } })).toMatchObject({
      status: "pending",
      attemptCount: 0,
    });
    expect(await stack.prisma.deliveryAttempt.count({ where: { deliveryId: webhook.id } })).toBe(0);
  });

  it("two jobs for one forward attempt hand it over once: the second finds the claim's lease", async () => {
    const ep = await acct.api("POST", "/api/v1/endpoints", { type: "email", url: "mailto:twice@archive.example" });
    expect(ep.status).toBe(201);
    const original = await receive(toSupport("fwt1"));
    const id = newId("delivery");
    await stack.prisma.delivery.create({
      data: {
        id,
        accountId: acct.accountId,
        emailId: original.id,
        endpointId: ep.body.id,
        maxAttempts: 3,
        nextAttemptAt: new Date(),
      },
    });
    const deps = {
      prisma: stack.prisma,
      logger: createLogger("test", "silent"),
      relay: relayClient,
      backoffUnitMs: 20,
      requeue: async () => undefined,
    };
    // As when the sweeper re-queued a job that was still running, or BullMQ took a running one for stalled.
    const outcomes = await Promise.all([
      attemptForward(deps, id, { expectedAttempt: 1 }),
      attemptForward(deps, id, { expectedAttempt: 1 }),
    ]);
    // The other finds the lease ("early": its job is delayed until then) or, if the first was already
    // recorded when it looked, the delivery done ("skipped"); either way it hands nothing over.
    const [made, other] = outcomes[0]?.outcome === "delivered" ? outcomes : [outcomes[1], outcomes[0]];
    expect(made?.outcome).toBe("delivered");
    expect(["early", "skipped"]).toContain(other?.outcome);
    expect(relay.messages.filter((m) => m.rcptTo.includes("twice@archive.example"))).toHaveLength(1);
    const row = await stack.prisma.delivery.findUniqueOrThrow({ where: { id }, include: { attempts: true } });
    expect(row).toMatchObject({ status: "delivered", attemptCount: 1 });
    expect(row.attempts).toHaveLength(1);
    // A job for the attempt already made skips itself.
    expect(await attemptForward(deps, id, { expectedAttempt: 1 })).toMatchObject({ outcome: "skipped" });
  });
});
