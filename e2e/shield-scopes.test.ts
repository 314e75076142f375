import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Scopes and message facts by real SMTP: an address rule decides for that address only (one message
 * to two recipients is blocked for one and stored for the other, and the spool keeps the bytes the
 * stored copy needs); a domain rule covers every recipient on its domain and nothing elsewhere; `to`
 * includes Cc.
 */
describe("shield rule scopes end to end", () => {
  let stack: Stack;
  let receiver: Receiver;
  let acct: TestAccount;
  let transport: nodemailer.Transporter;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    stack = await startStack();
    receiver = await startReceiver();
    acct = await stack.account({ plan: "scale" });
    const ep = (await acct.api("POST", "/api/v1/endpoints", { url: `${receiver.url}/in` })).body.id;
    for (const name of ["one.example.com", "two.example.com"]) {
      const dom = await acct.api("POST", "/api/v1/domains", { domain: name });
      await stack.admin("domains", "verify", "--domain", name, "--force");
      ids[name] = dom.body.id;
      for (const localPart of ["support", "sales"]) {
        const addr = await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart, endpointId: ep });
        ids[`${localPart}@${name}`] = addr.body.id;
      }
    }
    const create = async (key: string, body: object) => {
      const res = await acct.api("POST", "/api/v1/shield-rules", body);
      expect(res.status).toBe(201);
      ids[key] = res.body.id;
    };
    await create("salesPromo", {
      name: "No promos for sales@one",
      action: "block",
      addressId: ids["sales@one.example.com"],
      conditions: [{ field: "subject", operator: "contains", value: "promo" }],
    });
    await create("twoNewsletter", {
      name: "No newsletters on two",
      action: "block",
      domainId: ids["two.example.com"],
      conditions: [{ field: "subject", operator: "starts_with", value: "newsletter" }],
    });
    await create("ccTrigger", {
      name: "Cc'd to the trap",
      action: "block",
      conditions: [{ field: "to", operator: "equals", value: "trap@elsewhere.example" }],
    });
    transport = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true });
  });
  afterAll(async () => {
    transport?.close();
    await receiver?.close();
    await stack?.close();
  });

  const settled = (spoolId: string, n: number) =>
    waitFor(
      async () => {
        const rows = await stack.prisma.spoolRecipient.findMany({ where: { spoolId } });
        return rows.length === n && rows.every((r) => r.status !== "pending" && r.status !== "storing")
          ? rows
          : undefined;
      },
      { what: `recipients of ${spoolId} processed` },
    );
  const sendTo = async (to: string[], subject: string, extra: object = {}) => {
    const info = await transport.sendMail({ from: "a@sender.example", to, subject, text: "hello", ...extra });
    return /queued as (spl_\w+)/.exec(info.response)?.[1] as string;
  };

  it("an address rule blocks that address's copy only; the spool keeps the stored copy's bytes", async () => {
    const spoolId = await sendTo(["support@one.example.com", "sales@one.example.com"], "Big promo");
    const rows = await settled(spoolId, 2);
    expect(Object.fromEntries(rows.map((r) => [r.recipient, r.status]))).toEqual({
      "support@one.example.com": "stored",
      "sales@one.example.com": "blocked",
    });
    const blocks = await stack.prisma.blockRecord.findMany({ where: { subject: "Big promo" } });
    expect(blocks.map((b) => [b.recipient, b.ruleId])).toEqual([["sales@one.example.com", ids.salesPromo]]);
    const emails = await stack.prisma.email.findMany({ where: { spoolId } });
    expect(emails.map((e) => e.recipient)).toEqual(["support@one.example.com"]);
    expect(await stack.prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(1);
  });

  it("a domain rule covers every address on its domain and no other domain", async () => {
    const spoolId = await sendTo(
      ["support@two.example.com", "sales@two.example.com", "support@one.example.com"],
      "Newsletter #4",
    );
    const rows = await settled(spoolId, 3);
    expect(Object.fromEntries(rows.map((r) => [r.recipient, r.status]))).toEqual({
      "support@two.example.com": "blocked",
      "sales@two.example.com": "blocked",
      "support@one.example.com": "stored",
    });
    const email = await stack.prisma.email.findFirstOrThrow({ where: { spoolId } });
    expect(email).toMatchObject({ shieldRuleId: null, shieldAction: null });
  });

  it("`to` includes Cc: a rule on a Cc'd address blocks every copy", async () => {
    const spoolId = await sendTo(["support@one.example.com"], "hi", { cc: "Trap <TRAP@elsewhere.example>" });
    // A fully blocked message leaves no spool rows to watch: wait for its block record.
    const block = await waitFor(
      () => stack.prisma.blockRecord.findFirst({ where: { recipient: "support@one.example.com", subject: "hi" } }),
      { what: "block record" },
    );
    expect(block.ruleId).toBe(ids.ccTrigger);
    // Nothing of the message is left: the spool is purged after the block record commits.
    await waitFor(async () => (await stack.prisma.spooledMessage.count({ where: { id: spoolId } })) === 0, {
      what: "spool purged",
    });
  });
});
