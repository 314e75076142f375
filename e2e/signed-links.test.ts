import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type { Stack, TestAccount, WebhookFixture } from "@mailroom/stack";
import { mailAttachmentToWebhook, routeToWebhook, startWebhookFixture } from "@mailroom/stack";
import type { Receiver } from "@mailroom/testing";

/**
 * BYTE_STORE=postgres with SIGNED_URL_SECRET: the webhook payload's attachment link is one the API
 * serves without an API key, checked by its HMAC and expiry. Real SMTP in, real HTTP receiver out.
 */
let fx: WebhookFixture;
let stack: Stack;
let receiver: Receiver;
let acct: TestAccount;

beforeAll(async () => {
  fx = await startWebhookFixture({ signedUrlSecret: "test-signed-url-secret-0123456789abcdef" });
  ({ stack, receiver, acct } = fx);
}, 120_000);

afterAll(() => fx?.close());

it("links the attachment with an expiring signed API URL that needs no key and refuses a tampered one", async () => {
  const domain = "signed-links-example.com";
  await routeToWebhook(stack, acct, `in@${domain}`, `${receiver.url}/hook`);

  const content = Buffer.from("%PDF-1.4 signed link test\n".repeat(100));
  const email = await mailAttachmentToWebhook(stack, receiver, {
    to: `in@${domain}`,
    subject: "Report",
    attachment: { filename: "report.pdf", content, contentType: "application/pdf" },
  });
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
