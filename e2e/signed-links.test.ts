import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * BYTE_STORE=postgres with SIGNED_URL_SECRET: the webhook payload's attachment link is one the API
 * serves without an API key, checked by its HMAC and expiry. Real SMTP in, real HTTP receiver out.
 */
let stack: Stack;
let receiver: Receiver;
let acct: TestAccount;

beforeAll(async () => {
  stack = await startStack({ signedUrlSecret: "test-signed-url-secret-0123456789abcdef" });
  receiver = await startReceiver();
  acct = await stack.account();
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

it("links the attachment with an expiring signed API URL that needs no key and refuses a tampered one", async () => {
  const domain = "signed-links-example.com";
  const dom = await acct.api("POST", "/api/v1/domains", { domain });
  expect(dom.status).toBe(201);
  await stack.admin("domains", "verify", "--domain", domain, "--force");
  const ep = await acct.api("POST", "/api/v1/endpoints", { name: "hook", url: `${receiver.url}/hook` });
  const addr = await acct.api("POST", "/api/v1/addresses", {
    domainId: dom.body.id,
    localPart: "in",
    endpointId: ep.body.id,
  });
  expect(addr.status).toBe(201);

  const content = Buffer.from("%PDF-1.4 signed link test\n".repeat(100));
  const transport = nodemailer.createTransport({
    host: "127.0.0.1",
    port: stack.smtpPort,
    secure: false,
    ignoreTLS: true,
  });
  await transport.sendMail({
    from: "alice@sender.example",
    to: `in@${domain}`,
    subject: "Report",
    text: "Attached.\n",
    attachments: [{ filename: "report.pdf", content, contentType: "application/pdf" }],
  });
  transport.close();

  const req = await waitFor(async () => receiver.requests[0] ?? null, { timeoutMs: 120_000 });
  const email = JSON.parse(req.body.toString()).data.email;
  const link = new URL(email.attachments[0].url);
  expect(`${link.origin}${link.pathname}`).toBe(`${stack.apiUrl}/files/emails/${email.id}/attachments/0`);
  const expires = Number(link.searchParams.get("expires"));
  expect(expires * 1000).toBeGreaterThan(Date.now());

  const res = await fetch(link); // no Authorization header
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/pdf");
  expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);

  // Another expiry, another attachment, or no signature: refused.
  const later = new URL(link);
  later.searchParams.set("expires", String(expires + 3600));
  expect((await fetch(later)).status).toBe(403);
  const other = new URL(link.href.replace("/attachments/0?", "/attachments/1?"));
  expect((await fetch(other)).status).toBe(403);
  expect((await fetch(`${link.origin}${link.pathname}`)).status).toBe(403);
}, 300_000);
