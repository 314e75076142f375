import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Replies over SMTP, as a German Gmail user and a French Outlook user send them: the rule engine
 * stores strippedText, and the webhook body at a real receiver, GET /emails/{id} and MCP get_email
 * all carry it. A row stored before the column existed (null) gets it computed on read.
 */
const replies = new URL("../services/rule-engine/test/replies/", import.meta.url);

describe("strippedText end to end", () => {
  let stack: Stack;
  let receiver: Receiver;
  let acct: TestAccount;
  let mcp: Client;

  beforeAll(async () => {
    stack = await startStack();
    receiver = await startReceiver();
    acct = await stack.account();
    mcp = new Client({ name: "reply-text-test", version: "1.0.0" });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${acct.key}` } },
      }),
    );
  });
  afterAll(async () => {
    await mcp?.close();
    await receiver?.close();
    await stack?.close();
  });

  it("is in the webhook body, the API view and MCP reads", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "replies-example.com" });
    expect(dom.status).toBe(201);
    await stack.admin("domains", "verify", "--domain", "replies-example.com", "--force");
    const ep = await acct.api("POST", "/api/v1/endpoints", {
      name: "r",
      url: `${receiver.url}/hook`,
      timeoutSeconds: 5,
    });
    expect(ep.status).toBe(201);
    const addr = await acct.api("POST", "/api/v1/addresses", {
      domainId: dom.body.id,
      localPart: "team",
      endpointId: ep.body.id,
    });
    expect(addr.status).toBe(201);

    const transport = nodemailer.createTransport({
      host: "127.0.0.1",
      port: stack.smtpPort,
      secure: false,
      ignoreTLS: true,
    });
    const cases = [
      { file: "gmail-de.eml", stripped: "Danke, Dienstag passt.\n\nGrüße\nAna" },
      { file: "outlook-fr.eml", stripped: "Parfait, à mardi." },
    ];
    for (const c of cases) {
      await transport.sendMail({
        envelope: { from: "ana@example.org", to: ["team@replies-example.com"] },
        raw: readFileSync(new URL(c.file, replies)),
      });
    }
    await waitFor(
      async () =>
        (await stack.prisma.delivery.count({ where: { endpointId: ep.body.id, status: "delivered" } })) ===
          cases.length || null,
      { what: "both deliveries delivered", timeoutMs: 120_000 },
    );

    const bodies = receiver.requests.map((r) => JSON.parse(r.body.toString("utf8")));
    for (const c of cases) {
      const payload = bodies.find((b) => b.data.email.textBody.startsWith(c.stripped.slice(0, 10)));
      expect(payload?.data.email.strippedText).toBe(c.stripped);
      const id: string = payload.data.email.id;
      // Computed once, by the rule engine, and stored.
      const row = await stack.prisma.email.findUniqueOrThrow({ where: { id }, select: { strippedText: true } });
      expect(row.strippedText).toBe(c.stripped);

      const got = await acct.api("GET", `/api/v1/emails/${id}`);
      expect(got.status).toBe(200);
      expect(got.body.strippedText).toBe(c.stripped);
      expect(got.body.textBody).toContain("Bob Smith <bob@example.com>");

      const viaMcp = (await mcp.callTool({ name: "get_email", arguments: { id } })) as unknown as {
        structuredContent: { strippedText: string };
      };
      expect(viaMcp.structuredContent.strippedText).toBe(c.stripped);

      // Mail stored before the column existed reads the same.
      await stack.prisma.email.update({ where: { id }, data: { strippedText: null } });
      expect((await acct.api("GET", `/api/v1/emails/${id}`)).body.strippedText).toBe(c.stripped);
    }

    // A delivery (here a replay) sends the stored value; the dispatcher does not recompute it.
    const first = bodies[0];
    await stack.prisma.email.update({ where: { id: first.data.email.id }, data: { strippedText: "as stored" } });
    expect((await acct.api("POST", `/api/v1/deliveries/${first.id}/retry`)).status).toBe(200);
    await waitFor(async () => receiver.requests.length > cases.length || null, {
      what: "the replay",
      timeoutMs: 120_000,
    });
    expect(JSON.parse(receiver.requests[cases.length]!.body.toString("utf8")).data.email.strippedText).toBe(
      "as stored",
    );
  }, 180_000);
});
