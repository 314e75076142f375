import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { monthKey } from "@mailroom/core";
import { monthlyReceived } from "@mailroom/db";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Each shield action's observable effect, by real SMTP through every service: rows in Postgres, the
 * spool's bytes, and what two real HTTP receivers got. support@ is routed to receiver A; rules, in
 * evaluation order:
 *   1. allow  from equals vip@partner.example            (an exception above the broad block)
 *   2. block  subject contains "special offer"           (broad)
 *   3. route  subject contains "[route]" → endpoint B
 *   4. route  subject contains "[hold]"  → []            (quarantine)
 */
describe("shield rules end to end (SMTP in)", () => {
  let stack: Stack;
  let a: Receiver;
  let b: Receiver;
  let acct: TestAccount;
  let epA: string;
  let epB: string;
  const rules: Record<"allow" | "block" | "route" | "hold", string> = { allow: "", block: "", route: "", hold: "" };
  let transport: nodemailer.Transporter;

  beforeAll(async () => {
    stack = await startStack();
    [a, b] = await Promise.all([startReceiver(), startReceiver()]);
    acct = await stack.account({ plan: "scale" });
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "shield-e2e.example.com" });
    await stack.admin("domains", "verify", "--domain", "shield-e2e.example.com", "--force");
    epA = (await acct.api("POST", "/api/v1/endpoints", { name: "A", url: `${a.url}/a` })).body.id;
    epB = (await acct.api("POST", "/api/v1/endpoints", { name: "B", url: `${b.url}/b` })).body.id;
    const addr = await acct.api("POST", "/api/v1/addresses", {
      domainId: dom.body.id,
      localPart: "support",
      endpointId: epA,
    });
    expect(addr.status).toBe(201);
    const create = async (body: object) => {
      const res = await acct.api("POST", "/api/v1/shield-rules", body);
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    rules.allow = await create({
      name: "VIP partner",
      action: "allow",
      conditions: [{ field: "from", operator: "equals", value: "VIP@partner.example" }],
    });
    rules.block = await create({
      name: "No offers",
      action: "block",
      conditions: [{ field: "subject", operator: "contains", value: "special offer" }],
    });
    rules.route = await create({
      name: "To B",
      action: "route",
      conditions: [{ field: "subject", operator: "contains", value: "[route]" }],
      endpointIds: [epB],
    });
    rules.hold = await create({
      name: "Hold",
      action: "route",
      conditions: [{ field: "subject", operator: "contains", value: "[hold]" }],
      endpointIds: [],
    });
    transport = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true });
  });
  afterAll(async () => {
    transport?.close();
    await Promise.all([a?.close(), b?.close()]);
    await stack?.close();
  });

  const send = async (from: string, subject: string, messageId: string) => {
    const info = await transport.sendMail({
      from,
      to: "support@shield-e2e.example.com",
      subject,
      text: `body of ${subject}`,
      messageId,
    });
    expect(info.accepted).toEqual(["support@shield-e2e.example.com"]);
    return /queued as (spl_\w+)/.exec(info.response)?.[1] as string;
  };
  const subjectsAt = (r: Receiver) => r.requests.map((q) => JSON.parse(q.body.toString("utf8")).data.email.subject);
  const emailOf = (messageId: string) =>
    waitFor(() => stack.prisma.email.findFirst({ where: { accountId: acct.accountId, messageId } }), {
      what: `email ${messageId}`,
    });

  it("allow above a broad block: the exception is delivered, and the email records the rule", async () => {
    await send("VIP <vip@partner.example>", "Special offer for you", "<allow-1@partner.example>");
    await waitFor(async () => a.requests.length >= 1, { what: "delivery to A" });
    const email = await emailOf("<allow-1@partner.example>");
    expect(email).toMatchObject({ shieldRuleId: rules.allow, shieldAction: "allow", subject: "Special offer for you" });
    await waitFor(() => stack.prisma.delivery.findFirst({ where: { emailId: email.id, status: "delivered" } }));
    expect(subjectsAt(a)).toContain("Special offer for you");
  });

  it("block keeps only the block record: no Email, no spool bytes, no delivery; still counted", async () => {
    const usage = () => monthlyReceived(stack.prisma, acct.accountId, monthKey(new Date()));
    const before = await usage();
    const spoolId = await send("Bulk <promo@bulk.example>", "A SPECIAL OFFER inside", "<block-1@bulk.example>");
    expect(spoolId).toMatch(/^spl_/);
    const block = await waitFor(
      () =>
        stack.prisma.blockRecord.findFirst({ where: { accountId: acct.accountId, subject: "A SPECIAL OFFER inside" } }),
      { what: "block record" },
    );
    expect(block).toMatchObject({
      ruleId: rules.block,
      ruleName: "No offers",
      sender: "promo@bulk.example",
      recipient: "support@shield-e2e.example.com",
    });
    expect(await stack.prisma.email.count({ where: { messageId: "<block-1@bulk.example>" } })).toBe(0);
    // The raw message (and its recipient rows, by cascade) is gone from the spool.
    await waitFor(async () => (await stack.prisma.spooledMessage.count({ where: { id: spoolId } })) === 0, {
      what: "spool purge",
    });
    expect(await stack.prisma.spoolRecipient.count({ where: { spoolId } })).toBe(0);
    expect(await usage()).toBe(before + 1);

    const blocks = await acct.api("GET", `/api/v1/blocks?ruleId=${rules.block}`);
    expect(blocks.status).toBe(200);
    expect(blocks.body.data).toEqual([
      {
        id: block.id,
        ruleId: rules.block,
        ruleName: "No offers",
        sender: "promo@bulk.example",
        recipient: "support@shield-e2e.example.com",
        subject: "A SPECIAL OFFER inside",
        receivedAt: block.receivedAt.toISOString(),
      },
    ]);
  });

  it("route delivers to the rule's endpoint instead of the address's", async () => {
    await send("x@sender.example", "[route] to B please", "<route-1@sender.example>");
    const email = await emailOf("<route-1@sender.example>");
    expect(email).toMatchObject({ shieldRuleId: rules.route, shieldAction: "route" });
    const deliveries = await stack.prisma.delivery.findMany({ where: { emailId: email.id } });
    expect(deliveries.map((d) => d.endpointId)).toEqual([epB]);
    await waitFor(async () => b.requests.length >= 1, { what: "delivery to B" });
    expect(subjectsAt(b)).toEqual(["[route] to B please"]);
    expect(b.requests[0]?.path).toBe("/b");
  });

  it("route with no endpoints quarantines: stored and readable, delivered nowhere", async () => {
    await send("y@sender.example", "[hold] check me", "<hold-1@sender.example>");
    const email = await emailOf("<hold-1@sender.example>");
    expect(email).toMatchObject({ shieldRuleId: rules.hold, shieldAction: "route" });
    // Deliveries are created in the same transaction as the Email: none now means none ever.
    expect(await stack.prisma.delivery.count({ where: { emailId: email.id } })).toBe(0);
    const got = await acct.api("GET", `/api/v1/emails/${email.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ subject: "[hold] check me", textBody: "body of [hold] check me\n" });
  });

  it("a message no rule matches goes to the address's destination; nothing else reached A or B", async () => {
    await send("z@sender.example", "plain hello", "<plain-1@sender.example>");
    const email = await emailOf("<plain-1@sender.example>");
    expect(email).toMatchObject({ shieldRuleId: null, shieldAction: null });
    await waitFor(async () => subjectsAt(a).includes("plain hello"), { what: "plain delivery to A" });
    // Every Delivery row of the account is delivered by now, so the receivers' logs are final.
    await waitFor(
      async () =>
        (await stack.prisma.delivery.count({ where: { accountId: acct.accountId, status: { not: "delivered" } } })) ===
        0,
    );
    expect(subjectsAt(a).sort()).toEqual(["Special offer for you", "plain hello"]);
    expect(subjectsAt(b)).toEqual(["[route] to B please"]);
  });

  it("a disabled rule stops deciding at once; the next matching rule decides", async () => {
    expect((await acct.api("PATCH", `/api/v1/shield-rules/${rules.allow}`, { enabled: false })).status).toBe(200);
    await send("VIP <vip@partner.example>", "special offer, again", "<allow-2@partner.example>");
    await waitFor(
      () =>
        stack.prisma.blockRecord.findFirst({ where: { accountId: acct.accountId, subject: "special offer, again" } }),
      { what: "block of the no-longer-allowed sender" },
    );
    expect(await stack.prisma.email.count({ where: { messageId: "<allow-2@partner.example>" } })).toBe(0);
    expect((await acct.api("PATCH", `/api/v1/shield-rules/${rules.allow}`, { enabled: true })).status).toBe(200);
  });

  it("reorder changes which rule decides: block moved above allow blocks the VIP too", async () => {
    const res = await acct.api("POST", "/api/v1/shield-rules/reorder", {
      ids: [rules.block, rules.allow, rules.route, rules.hold],
    });
    expect(res.status).toBe(200);
    await send("VIP <vip@partner.example>", "special offer, reordered", "<allow-3@partner.example>");
    const block = await waitFor(
      () =>
        stack.prisma.blockRecord.findFirst({
          where: { accountId: acct.accountId, subject: "special offer, reordered" },
        }),
      { what: "block after reorder" },
    );
    expect(block.ruleId).toBe(rules.block);
    expect(await stack.prisma.email.count({ where: { messageId: "<allow-3@partner.example>" } })).toBe(0);
  });
});
