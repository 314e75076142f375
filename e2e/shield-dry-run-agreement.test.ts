import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * POST /shield-rules/test and the rule engine read the same address headers the same way (issue 12):
 * each case is sent by real SMTP through ingest and the engine, and given to the dry run as fields
 * with the same header values; both must reach the same decision. Rules (all `block`):
 *   from_domain equals sender.test · to equals carol@other.test · to equals b@group.test
 */
describe("shield dry run agrees with the engine on address headers", () => {
  let stack: Stack;
  let acct: TestAccount;
  let transport: nodemailer.Transporter;
  const rcpt = "inbox@agree.example.com";

  beforeAll(async () => {
    stack = await startStack();
    acct = await stack.account({ plan: "scale" });
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "agree.example.com" });
    await stack.admin("domains", "verify", "--domain", "agree.example.com", "--force");
    expect((await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "inbox" })).status).toBe(
      201,
    );
    for (const [name, field, value] of [
      ["sender domain", "from_domain", "Sender.Test"],
      ["carol", "to", "carol@other.test"],
      ["group member", "to", "b@group.test"],
    ] as const) {
      const res = await acct.api("POST", "/api/v1/shield-rules", {
        name,
        action: "block",
        conditions: [{ field, operator: "equals", value }],
      });
      expect(res.status).toBe(201);
    }
    transport = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true });
  });
  afterAll(async () => {
    transport?.close();
    await stack?.close();
  });

  /** The engine's decision for a message with these From/To headers: "block" or "none". */
  async function engine(subject: string, from: string, to: string): Promise<string> {
    const raw = `From: ${from}\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@agree.test>\r\n\r\nhello\r\n`;
    await transport.sendMail({ envelope: { from: "envelope@bounce.test", to: [rcpt] }, raw });
    return waitFor(
      async () => {
        const where = { accountId: acct.accountId, subject };
        if (await stack.prisma.blockRecord.findFirst({ where })) return "block";
        if (await stack.prisma.email.findFirst({ where })) return "none";
        return null;
      },
      { what: `the engine's decision on ${subject}`, timeoutMs: 30_000 },
    );
  }

  async function dryRun(
    from: string,
    to: string,
  ): Promise<{ decision: string; facts: { from: string; to: string[] } }> {
    const res = await acct.api("POST", "/api/v1/shield-rules/test", { recipient: rcpt, from, to });
    expect(res.status).toBe(200);
    return res.body;
  }

  const cases: { name: string; from: string; to: string; decision: "block" | "none"; facts?: object }[] = [
    {
      name: "display-name-from",
      from: "Alice <alice@Sender.Test>",
      to: rcpt,
      decision: "block",
      facts: { from: "alice@sender.test" },
    },
    { name: "quoted-comma-name", from: '"Doe, Jane" <Jane@SENDER.TEST>', to: rcpt, decision: "block" },
    { name: "encoded-name", from: "=?utf-8?Q?Al=C3=AFce?= <alice@sender.test>", to: rcpt, decision: "block" },
    { name: "upper-case-bare", from: "ALICE@SENDER.TEST", to: rcpt, decision: "block" },
    { name: "other-sender", from: "Mallory <m@sender.test.evil>", to: rcpt, decision: "none" },
    {
      name: "to-list-with-names",
      from: "bob@ok.test",
      to: `Inbox <${rcpt}>, "Carol C." <Carol@Other.Test>`,
      decision: "block",
      facts: { to: [rcpt, "carol@other.test"] },
    },
    {
      name: "to-group",
      from: "bob@ok.test",
      to: `Team: a@group.test, B <B@Group.Test>;, ${rcpt}`,
      decision: "block",
      facts: { to: [rcpt, "a@group.test", "b@group.test"] },
    },
    { name: "to-empty-group", from: "bob@ok.test", to: `Undisclosed recipients:;`, decision: "none" },
  ];

  it.each(cases)("$name", async (c) => {
    const [byEngine, dry] = await Promise.all([engine(`agree-${c.name}`, c.from, c.to), dryRun(c.from, c.to)]);
    expect({ engine: byEngine, dryRun: dry.decision }).toEqual({ engine: c.decision, dryRun: c.decision });
    if (c.facts) expect(dry.facts).toMatchObject(c.facts);
  });
});
