import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { dryRunResultSchema } from "../src/routes/shield-schemas.ts";

/** POST /shield-rules/test: the account's stored rules against a message given as fields or raw MIME. */
describe("POST /shield-rules/test (dry run)", () => {
  let stack: Stack;
  let acct: TestAccount;
  let domainId: string;
  let addressId: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account({ plan: "scale" });
    domainId = (await acct.api("POST", "/api/v1/domains", { domain: "dry.example.com" })).body.id;
    addressId = (await acct.api("POST", "/api/v1/addresses", { domainId, localPart: "billing" })).body.id;
    const ep = (await acct.api("POST", "/api/v1/endpoints", { url: "http://127.0.0.1:9/x" })).body.id;
    const create = async (key: string, body: object) => {
      const res = await acct.api("POST", "/api/v1/shield-rules", body);
      expect(res.status).toBe(201);
      ids[key] = res.body.id;
    };
    await create("disabled", {
      name: "Disabled catch-everything",
      action: "allow",
      conditions: [{ field: "subject", operator: "not_contains", value: "zzz" }],
    });
    await acct.api("PATCH", `/api/v1/shield-rules/${ids.disabled}`, { enabled: false });
    await create("addressPdf", {
      name: "Billing PDFs to the archive",
      action: "route",
      addressId,
      endpointIds: [ep],
      conditions: [
        { field: "has_attachment", operator: "is_true" },
        { field: "attachment_type", operator: "equals", value: "application/pdf" },
      ],
    });
    await create("spfFail", {
      name: "SPF fail from the bank",
      action: "block",
      conditions: [
        { field: "from_domain", operator: "equals", value: "bank.example" },
        { field: "spf_verdict", operator: "equals", value: "fail" },
      ],
    });
    await create("hold", {
      name: "Hold wire transfers",
      action: "route",
      domainId,
      conditions: [{ field: "body", operator: "contains", value: "wire transfer" }],
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const dry = async (body: unknown) => {
    const res = await acct.api("POST", "/api/v1/shield-rules/test", body);
    // Every answer has exactly the documented shape.
    if (res.status === 200) expect(dryRunResultSchema.safeParse(res.body).error).toBeUndefined();
    return res;
  };

  it("fields: names the deciding rule, the effect and why, with the full trace", async () => {
    const res = await dry({
      from: "Alerts@Bank.Example",
      to: ["billing@dry.example.com"],
      subject: "Statement",
      spfVerdict: "FAIL",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      decision: "block",
      outcome: "block",
      rule: { id: ids.spfFail, name: "SPF fail from the bank", action: "block", priority: 3, scope: "account" },
      endpointIds: null,
      recipient: { address: "billing@dry.example.com", domainId, addressId },
    });
    expect(res.body.reason).toMatch(/^Rule "SPF fail from the bank" \(priority 3\) matched all 2 condition\(s\)/);
    expect(
      res.body.trace.map((t: { ruleId: string; matched: boolean; skipped?: string }) => [
        t.ruleId,
        t.matched,
        t.skipped ?? null,
      ]),
    ).toEqual([
      [ids.disabled, false, "disabled"],
      [ids.addressPdf, false, null],
      [ids.spfFail, true, null],
      [ids.hold, false, "not_reached"],
    ]);
    // Why the PDF rule did not match: no attachment at all.
    expect(res.body.trace[1].conditions).toEqual([
      { index: 0, field: "has_attachment", operator: "is_true", matched: false },
      { index: 1, field: "attachment_type", operator: "equals", matched: false },
    ]);
  });

  it("raw MIME: parsed for from, to, subject, body and attachments", async () => {
    const raw = [
      "From: Someone <someone@else.example>",
      "To: billing+q3@dry.example.com",
      "Subject: Q3 invoice",
      "MIME-Version: 1.0",
      'Content-Type: multipart/mixed; boundary="b1"',
      "",
      "--b1",
      "Content-Type: text/plain; charset=utf-8",
      "",
      "See attached.",
      "--b1",
      'Content-Type: application/pdf; name="q3.pdf"',
      'Content-Disposition: attachment; filename="q3.pdf"',
      "Content-Transfer-Encoding: base64",
      "",
      "JVBERi0xLjQK",
      "--b1--",
      "",
    ].join("\r\n");
    const res = await dry({ raw });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      decision: "route",
      outcome: "route",
      rule: { id: ids.addressPdf, scope: "address" },
      // billing+q3@ resolves to the billing address, as SMTP ingest resolves it.
      recipient: { address: "billing+q3@dry.example.com", domainId, addressId },
      facts: {
        from: "someone@else.example",
        fromDomain: "else.example",
        subject: "Q3 invoice",
        hasAttachment: true,
        attachments: [{ filename: "q3.pdf", contentType: "application/pdf" }],
      },
    });
    expect(res.body.endpointIds).toHaveLength(1);
  });

  it("scope: a domain rule applies on its domain only; an empty route reports quarantine", async () => {
    const onDomain = await dry({
      from: "a@b.example",
      to: "anyone@dry.example.com",
      body: "Please do a WIRE TRANSFER",
    });
    expect(onDomain.body).toMatchObject({
      decision: "route",
      outcome: "quarantine",
      endpointIds: [],
      rule: { id: ids.hold, scope: "domain" },
      recipient: { domainId, addressId: null },
    });
    expect(onDomain.body.reason).toMatch(/stored \(readable over the API\) and delivered nowhere/);

    const elsewhere = await dry({ from: "a@b.example", to: "x@other.example", body: "wire transfer" });
    expect(elsewhere.body).toMatchObject({ decision: "none", outcome: "deliver", rule: null, endpointIds: null });
    expect(elsewhere.body.trace.find((t: { ruleId: string }) => t.ruleId === ids.hold).skipped).toBe("out_of_scope");
    expect(elsewhere.body.reason).toMatch(/^No enabled rule in scope matched/);
  });

  it("recipient overrides the To header for scope", async () => {
    const res = await dry({
      from: "a@b.example",
      to: "x@other.example",
      recipient: "team@dry.example.com",
      body: "wire transfer",
    });
    expect(res.body).toMatchObject({ decision: "route", recipient: { address: "team@dry.example.com", domainId } });
    expect(res.body.facts.to).toEqual(["team@dry.example.com", "x@other.example"]);
  });

  it.each([
    [{}, /^from: is required unless raw is given$/],
    [{ raw: "Subject: x\r\n\r\nhi", subject: "y" }, /^subject: cannot be combined with raw/],
    [{ from: "a@b.example" }, /^recipient: is required when the message has no To address$/],
    [{ from: "a@b.example", to: 5 }, /^to: must be an address or an array of addresses/],
    [{ from: "a@b.example", to: "x@y.example", extra: 1 }, /^extra: /],
    ["not json", /^body: malformed JSON$/],
  ])("refuses %j with 400", async (body, message) => {
    const res = await dry(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
  });

  it("address fields are header values: a line break in one is refused, never a second header", async () => {
    const res = await dry({ from: "a@x.example\r\nSubject: injected", to: "billing@dry.example.com" });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^from: must be one line/);
  });

  it("verdict fields: virus_verdict, dmarc_verdict and dmarc_overridden, as given, decide as the engine would", async () => {
    const rule = async (name: string, conditions: object[]) => {
      const res = await acct.api("POST", "/api/v1/shield-rules", { name, action: "block", conditions });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const virus = await rule("Viruses", [{ field: "virus_verdict", operator: "equals", value: "FAIL" }]);
    const dmarc = await rule("DMARC failures nobody vouched for", [
      { field: "dmarc_verdict", operator: "equals", value: "FAIL" },
      { field: "dmarc_overridden", operator: "is_false" },
    ]);
    try {
      const base = { from: "someone@elsewhere.example", to: "billing@dry.example.com" };
      const infected = await dry({ ...base, virusVerdict: "FAIL", arcVerdict: "GRAY" });
      expect(infected.body).toMatchObject({
        decision: "block",
        rule: { id: virus },
        facts: { virusVerdict: "FAIL", arcVerdict: "GRAY", dmarcVerdict: null, dmarcOverridden: false },
      });
      const unvouched = await dry({ ...base, virusVerdict: "PASS", dmarcVerdict: "FAIL" });
      expect(unvouched.body).toMatchObject({ decision: "block", rule: { id: dmarc } });
      const vouched = await dry({ ...base, dmarcVerdict: "FAIL", arcVerdict: "PASS", dmarcOverridden: true });
      expect(vouched.body).toMatchObject({ decision: "none", facts: { dmarcOverridden: true } });
      expect((await dry({ ...base, dmarcOverridden: "yes" })).body).toEqual({
        error: "dmarcOverridden: must be true or false",
      });
    } finally {
      for (const id of [virus, dmarc])
        expect((await acct.api("DELETE", `/api/v1/shield-rules/${id}`)).status).toBe(204);
    }
  });

  it("stores nothing", async () => {
    const before = await stack.prisma.shieldRule.findMany({ orderBy: { priority: "asc" } });
    await dry({ from: "alerts@bank.example", to: "billing@dry.example.com", spfVerdict: "FAIL" });
    expect(await stack.prisma.blockRecord.count()).toBe(0);
    expect(await stack.prisma.email.count()).toBe(0);
    expect(await stack.prisma.shieldRule.findMany({ orderBy: { priority: "asc" } })).toEqual(before);
  });
});
