import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import {
  createClient,
  type Delivery,
  type Email,
  type EmailSummary,
  type EndpointHealth,
  type EndpointWithSecret,
  type MailroomClient,
  type Stats,
  verifyWebhook,
  WebhookVerificationError,
} from "./index.ts";

/** @mailroom/client against a live stack: typed reads and writes, and verifyWebhook on a real delivery. */
describe("@mailroom/client", () => {
  let stack: Stack;
  let receiver: Receiver;
  let acct: TestAccount;
  let client: MailroomClient;
  let endpoint: EndpointWithSecret;
  let email: Email;

  beforeAll(async () => {
    stack = await startStack();
    receiver = await startReceiver();
    acct = await stack.account();
    client = createClient({ baseUrl: `${stack.apiUrl}/`, apiKey: acct.key });
  });
  afterAll(async () => {
    await receiver?.close();
    await stack?.close();
  });

  it("creates a domain, an endpoint and an address", async () => {
    const dom = await client.POST("/api/v1/domains", { body: { domain: "client-example.com" } });
    expect(dom.response.status).toBe(201);
    await stack.admin("domains", "verify", "--domain", "client-example.com", "--force");

    const ep = await client.POST("/api/v1/endpoints", {
      body: { name: "receiver", url: `${receiver.url}/hook`, timeoutSeconds: 5 },
    });
    expect(ep.response.status).toBe(201);
    if (!ep.data) throw new Error(JSON.stringify(ep.error));
    endpoint = ep.data;
    expect(endpoint.secret).toMatch(/^whsec_/);

    const addr = await client.POST("/api/v1/addresses", {
      body: { domainId: dom.data!.id, localPart: "orders", endpointId: endpoint.id },
    });
    expect(addr.response.status).toBe(201);
    expect(addr.data).toMatchObject({ localPart: "orders", endpointId: endpoint.id });
  });

  it("lists emails and gets one (body, strippedText, raw)", async () => {
    const transport = nodemailer.createTransport({
      host: "127.0.0.1",
      port: stack.smtpPort,
      secure: false,
      ignoreTLS: true,
    });
    await transport.sendMail({
      from: "Bob <bob@sender.example>",
      to: "orders@client-example.com",
      subject: "Order 7",
      text: "Ship it.\n\nOn Mon, 23 Nov 2026, Ana <orders@client-example.com> wrote:\n> Ready?\n",
      messageId: "<client-1@sender.example>",
    });
    await waitFor(() => stack.prisma.delivery.findFirst({ where: { endpointId: endpoint.id, status: "delivered" } }), {
      what: "a delivered delivery",
      timeoutMs: 120_000,
    });

    const list = await client.GET("/api/v1/emails", { params: { query: { limit: 10, q: "order" } } });
    expect(list.response.status).toBe(200);
    const summaries: EmailSummary[] = list.data!.data;
    expect(summaries.map((e) => e.subject)).toEqual(["Order 7"]);
    expect(list.data!.nextCursor).toBeNull();

    const got = await client.GET("/api/v1/emails/{id}", { params: { path: { id: summaries[0]!.id } } });
    expect(got.response.status).toBe(200);
    email = got.data!;
    expect(email).toMatchObject({ subject: "Order 7", fromAddress: "bob@sender.example", strippedText: "Ship it." });

    const raw = await client.GET("/api/v1/emails/{id}/raw", { params: { path: { id: email.id } }, parseAs: "text" });
    expect(raw.response.headers.get("content-type")).toBe("message/rfc822");
    expect(raw.data).toContain("Message-ID: <client-1@sender.example>");

    const missing = await client.GET("/api/v1/emails/{id}", { params: { path: { id: "em_missing000000000000" } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toEqual({ error: expect.any(String) });
  });

  it("lists the delivery", async () => {
    const r = await client.GET("/api/v1/deliveries", { params: { query: { endpointId: endpoint.id } } });
    const deliveries: Delivery[] = r.data!.data;
    expect(deliveries).toMatchObject([{ emailId: email.id, status: "delivered", attemptCount: 1 }]);
  });

  it("reads the aggregates: stats and endpoint health", async () => {
    const stats = await client.GET("/api/v1/stats", { params: { query: { window: "30d" } } });
    const totals: Stats["totals"] = stats.data!.totals;
    expect(totals.mail.stored).toBe(1);
    expect(totals.deliveries.succeeded).toBe(1);
    const health = await client.GET("/api/v1/endpoints/{id}/health", { params: { path: { id: endpoint.id } } });
    const h: EndpointHealth = health.data!;
    expect(h).toMatchObject({ attempts: 1, successRate: 1, failingSince: null });
  });

  it("verifyWebhook accepts the real delivery with either header style, and refuses forgeries", () => {
    const req = receiver.requests[0]!;
    const event = verifyWebhook(req.body, req.headers, endpoint.secret);
    expect(event.type).toBe("email.received");
    expect(event.data.email).toEqual(email);
    expect(event.data.endpointId).toBe(endpoint.id);

    const only = (keep: (name: string) => boolean) =>
      Object.fromEntries(Object.entries(req.headers).filter(([k]) => keep(k.toLowerCase())));
    const standard = only((k) => !k.startsWith("x-service-") && !k.startsWith("x-inbound-"));
    const service = only((k) => !k.startsWith("webhook-"));
    expect(Object.keys(standard)).toContain("webhook-signature");
    expect(Object.keys(service)).not.toContain("webhook-signature");
    expect(verifyWebhook(req.body.toString("utf8"), standard, endpoint.secret).id).toBe(event.id);
    expect(
      verifyWebhook(new Uint8Array(req.body), new Headers(service as Record<string, string>), endpoint.secret).id,
    ).toBe(event.id);

    const refuses = (fn: () => unknown, message: RegExp) => {
      expect(fn).toThrow(WebhookVerificationError);
      expect(fn).toThrow(message);
    };
    const tampered = Buffer.from(req.body.toString("utf8").replace("Order 7", "Order 8"));
    refuses(() => verifyWebhook(tampered, standard, endpoint.secret), /no webhook-signature v1 entry matches/);
    refuses(() => verifyWebhook(tampered, service, endpoint.secret), /no X-Service-Signature v1 entry matches/);
    refuses(() => verifyWebhook(req.body, req.headers, "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), /matches/);
    const later = (Number(req.headers["webhook-timestamp"]) + 301) * 1000;
    refuses(() => verifyWebhook(req.body, req.headers, endpoint.secret, { now: later }), /outside tolerance/);
    refuses(
      () => verifyWebhook(req.body, { "content-type": "application/json" }, endpoint.secret),
      /no signature headers/,
    );
  });
});
