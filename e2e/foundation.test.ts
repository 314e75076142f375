import { createHmac, timingSafeEqual } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * One real message through every service: SMTP (nodemailer) → spool → rule engine → dispatcher →
 * a real HTTP receiver, checked byte for byte against the API's view of the same email.
 */
describe("end to end: SMTP in → signed webhook out", () => {
  let stack: Stack;
  let receiver: Receiver;
  let acct: TestAccount;

  beforeAll(async () => {
    stack = await startStack();
    receiver = await startReceiver();
    acct = await stack.account();
  });
  afterAll(async () => {
    await receiver?.close();
    await stack?.close();
  });

  it("delivers one signed email.received POST whose payload matches GET /emails/{id}", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "E2E-Example.com" });
    expect(dom.status).toBe(201);
    expect(dom.body).toMatchObject({ domain: "e2e-example.com", status: "pending" });
    expect(dom.body.id).toMatch(/^dom_/);
    await stack.admin("domains", "verify", "--domain", "e2e-example.com", "--force");

    const ep = await acct.api("POST", "/api/v1/endpoints", {
      name: "receiver",
      url: `${receiver.url}/hook`,
      headers: { "X-Custom-Token": "abc123" },
      timeoutSeconds: 5,
    });
    expect(ep.status).toBe(201);
    const secret: string = ep.body.secret;
    expect(secret).toMatch(/^whsec_/);

    const addr = await acct.api("POST", "/api/v1/addresses", {
      domainId: dom.body.id,
      localPart: "Support",
      endpointId: ep.body.id,
    });
    expect(addr.status).toBe(201);
    expect(addr.body).toMatchObject({ localPart: "support", endpointId: ep.body.id, active: true });

    const transport = nodemailer.createTransport({
      host: "127.0.0.1",
      port: stack.smtpPort,
      secure: false,
      ignoreTLS: true,
    });
    const info = await transport.sendMail({
      from: "Alice <alice@sender.example>",
      to: "support@e2e-example.com",
      cc: "carol@elsewhere.example",
      subject: "Quarterly report ✓",
      text: "Hello,\nthe report is attached.\n",
      html: "<p>Hello,<br>the report is <b>attached</b>.</p>",
      messageId: "<e2e-1@sender.example>",
      attachments: [{ filename: "report.csv", content: "a,b\n1,2\n", contentType: "text/csv" }],
    });
    expect(info.accepted).toEqual(["support@e2e-example.com"]);
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as spl_/);

    const delivery = await waitFor(
      () => stack.prisma.delivery.findFirst({ where: { endpointId: ep.body.id, status: "delivered" } }),
      { what: "a delivered delivery" },
    );
    expect(receiver.requests).toHaveLength(1);
    const req = receiver.requests[0]!;
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/hook");

    // Headers: event, delivery id, signature, their legacy copies, and the endpoint's custom header.
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-service-event"]).toBe("email.received");
    expect(req.headers["x-inbound-event"]).toBe("email.received");
    expect(req.headers["x-service-delivery-id"]).toBe(delivery.id);
    expect(req.headers["x-inbound-delivery-id"]).toBe(delivery.id);
    expect(req.headers["x-custom-token"]).toBe("abc123");
    const signature = String(req.headers["x-service-signature"]);
    expect(req.headers["x-inbound-signature"]).toBe(signature);

    // Independent check of the Stripe-style signature over the exact bytes received.
    const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature);
    expect(m).not.toBeNull();
    const expected = createHmac("sha256", secret).update(`${m![1]}.`).update(req.body).digest();
    expect(timingSafeEqual(expected, Buffer.from(m![2]!, "hex"))).toBe(true);
    expect(Math.abs(Date.now() / 1000 - Number(m![1]))).toBeLessThan(300);

    const payload = JSON.parse(req.body.toString("utf8"));
    expect(payload).toMatchObject({
      id: delivery.id,
      type: "email.received",
      data: { domain: "e2e-example.com", address: "support@e2e-example.com", endpointId: ep.body.id },
    });

    const got = await acct.api("GET", `/api/v1/emails/${payload.data.email.id}`);
    expect(got.status).toBe(200);
    expect(payload.data.email).toEqual(got.body);
    expect(got.body).toMatchObject({
      direction: "inbound",
      messageId: "<e2e-1@sender.example>",
      inReplyTo: null,
      fromAddress: "alice@sender.example",
      toAddresses: ["support@e2e-example.com"],
      ccAddresses: ["carol@elsewhere.example"],
      subject: "Quarterly report ✓",
      textBody: "Hello,\nthe report is attached.\n",
      htmlBody: "<p>Hello,<br>the report is <b>attached</b>.</p>",
      attachments: [{ filename: "report.csv", contentType: "text/csv", size: 8, stored: true }],
      spamVerdict: "GRAY",
      // Who handed it to us (the webhook payload carries it too: it equals this view).
      received: { clientIp: "127.0.0.1", helo: expect.any(String), tls: null },
      send: null,
    });
    expect(got.body.id).toMatch(/^em_/);
    expect(got.body.threadId).toMatch(/^thr_/);
    expect(got.body.receivedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    // The attempt is on record, and nothing was delivered twice.
    const attempts = await stack.prisma.deliveryAttempt.findMany({ where: { deliveryId: delivery.id } });
    expect(attempts).toMatchObject([{ number: 1, statusCode: 200, error: null }]);
  });
});
