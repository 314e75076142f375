import { promises as nodeDns } from "node:dns";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import {
  type ArcForwarder,
  arcForward,
  authorSigned,
  type Clamd,
  type DnsServer,
  EICAR,
  mimeWithAttachment,
  type Receiver,
  signingKey,
  startClamd,
  startDnsServer,
  startReceiver,
  waitFor,
} from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Virus and ARC verdicts through every service, configured as a deployment configures them
 * (CLAMD_URL, ARC_TRUSTED_SEALERS), with a real clamd (Debian's, a test-written signature database),
 * mail in over SMTP, a shield rule made over the REST API, and the verdicts read where users read
 * them: the webhook payload a real receiver gets, GET /emails/{id}, and the block log.
 */
const DOMAIN = "verdicts-e2e.example.com";
const author = signingKey();
const listKey = signingKey();

let clamd: Clamd;
let dns: DnsServer;
let stack: Stack;
let acct: TestAccount;
let receiver: Receiver;
let transport: nodemailer.Transporter;
let list: ArcForwarder;

beforeAll(async () => {
  clamd = await startClamd();
  dns = await startDnsServer({
    "author.example": { TXT: ["v=spf1 ip4:192.0.2.10 -all"] },
    "sel1._domainkey.author.example": { TXT: [author.record] },
    "_dmarc.author.example": { TXT: ["v=DMARC1; p=reject"] },
    "lists.example": { TXT: ["v=spf1 ip4:127.0.0.1 -all"] },
    "arc._domainkey.lists.example": { TXT: [listKey.record] },
  });
  const dnsClient = new nodeDns.Resolver();
  dnsClient.setServers([dns.server]);
  const resolver = (name: string, rrtype: string) => dnsClient.resolve(name, rrtype);
  list = { domain: "lists.example", selector: "arc", key: listKey, resolver };
  stack = await startStack({
    authResolver: resolver,
    verdicts: { clamdUrl: clamd.tcpUrl, clamdTimeoutMs: 30_000, arcTrustedSealers: "lists.example" },
  });
  receiver = await startReceiver();
  acct = await stack.account({ plan: "scale" });
  const dom = await acct.api("POST", "/api/v1/domains", { domain: DOMAIN });
  await stack.admin("domains", "verify", "--domain", DOMAIN, "--force");
  const ep = await acct.api("POST", "/api/v1/endpoints", { name: "hook", url: `${receiver.url}/hook` });
  const addr = await acct.api("POST", "/api/v1/addresses", {
    domainId: dom.body.id,
    localPart: "in",
    endpointId: ep.body.id,
  });
  expect(addr.status).toBe(201);
  const rule = await acct.api("POST", "/api/v1/shield-rules", {
    name: "Block viruses",
    action: "block",
    conditions: [{ field: "virus_verdict", operator: "equals", value: "FAIL" }],
  });
  expect(rule.status).toBe(201);
  transport = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true });
}, 120_000);
afterAll(async () => {
  transport?.close();
  await receiver?.close();
  await stack?.close();
  await dns?.close();
  await clamd?.close();
});

let seq = 0;
const send = (mailFrom: string, raw: string) =>
  transport.sendMail({ envelope: { from: mailFrom, to: [`in@${DOMAIN}`] }, raw });
const withAttachment = (subject: string, content: Buffer) =>
  mimeWithAttachment({
    to: `in@${DOMAIN}`,
    subject,
    messageId: `<e2e-${++seq}-${Date.now()}@sender.example>`,
    filename: "report.com",
    contentType: "application/octet-stream",
    content,
  });

type Payload = { data: { email: Record<string, unknown> & { id: string; subject: string } } };

/** The webhook delivery of the message with this subject, parsed. */
const delivered = (subject: string) =>
  waitFor(
    async () =>
      receiver.requests
        .map((r) => JSON.parse(r.body.toString()) as Payload)
        .find((p) => p.data.email.subject === subject) ?? null,
    { what: `the webhook delivery of "${subject}"`, timeoutMs: 90_000 },
  );

/** The payload's email and the REST view agree, field for field (attachment links aside). */
async function viaRest(email: Payload["data"]["email"]) {
  const res = await acct.api("GET", `/api/v1/emails/${email.id}`);
  expect(res.status).toBe(200);
  const { attachments: _a, ...rest } = res.body;
  const { attachments: _b, ...payload } = email;
  expect(rest).toEqual(payload);
  return res.body;
}

describe("virus verdicts, a virus rule, and ARC, through the whole stack", () => {
  it("an EICAR attachment is blocked by the rule: a block record, nothing stored or delivered", async () => {
    await send("sender@sender.example", withAttachment("infected report", EICAR));
    const block = await waitFor(
      async () => {
        const res = await acct.api("GET", "/api/v1/blocks");
        return res.body.data.find((b: { subject: string }) => b.subject === "infected report") ?? null;
      },
      { what: "the block record", timeoutMs: 90_000 },
    );
    expect(block).toMatchObject({ ruleName: "Block viruses", recipient: `in@${DOMAIN}` });
    expect(await stack.prisma.email.count({ where: { subject: "infected report" } })).toBe(0);
  }, 120_000);

  it("a clean attachment: virusVerdict PASS in the webhook payload and GET /emails/{id}", async () => {
    await send("sender@sender.example", withAttachment("clean report", Buffer.from("figures\n")));
    const { email } = (await delivered("clean report")).data;
    expect(email).toMatchObject({
      virusVerdict: "PASS",
      virusSignature: null,
      arcVerdict: "GRAY",
      dmarcOverridden: false,
      verdictReasons: { virus: "clamd: no signature matched", arc: null, dmarc: null },
    });
    await viaRest(email);
  }, 120_000);

  it("forwarded through the trusted ARC sealer: arcVerdict PASS, DMARC FAIL marked overridden", async () => {
    const original = await authorSigned({
      from: "alice@author.example",
      to: "team@lists.example",
      subject: "agenda",
      messageId: `<e2e-arc-${Date.now()}@author.example>`,
      selector: "sel1",
      key: author,
    });
    const { raw } = await arcForward(original, list, {
      ip: "192.0.2.10",
      helo: "mail.author.example",
      mailFrom: "bounce@author.example",
    });
    await send("bounce@lists.example", raw);
    const { email } = (await delivered("[list] agenda")).data;
    expect(email).toMatchObject({
      dkimVerdict: "FAIL",
      dmarcVerdict: "FAIL",
      arcVerdict: "PASS",
      dmarcOverridden: true,
      verdictReasons: { dmarc: expect.stringMatching(/^overridden: .*lists\.example/) },
    });
    await viaRest(email);
  }, 120_000);

  it("clamd stopped: GRAY, and the mail (even EICAR) is stored and delivered", async () => {
    await clamd.stop();
    await send("sender@sender.example", withAttachment("unscanned report", EICAR));
    const { email } = (await delivered("unscanned report")).data;
    expect(email).toMatchObject({ virusVerdict: "GRAY", virusSignature: null });
    expect(String((email.verdictReasons as { virus: string }).virus)).toMatch(/^clamd: ECONNREFUSED/);
    expect(await viaRest(email)).toMatchObject({ virusVerdict: "GRAY" });
  }, 120_000);
});
