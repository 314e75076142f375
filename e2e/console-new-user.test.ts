import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createDomainDns } from "@mailroom/domain-verification";
import { type DnsServer, type Receiver, startDnsServer, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import type { Page } from "playwright-core";
import { createMember } from "../services/api/test/console-helpers.ts";
import { type ConsoleBrowser, openConsole, WAIT } from "./console-browser.ts";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Issue 17's "done when", in chromium through every service: a new member goes from sign-in to a
 * delivered webhook using only the console and one SMTP message. The domain is verified with
 * "Verify now" against a loopback DNS server (first with the records missing, then published); the
 * endpoint is created and edited in the page; the message appears in Mail over server-sent events
 * (no reload, no polling); its thread takes a reply; the delivery shows as delivered by itself.
 * Screenshots of each page at 1280 px and 390 px: test-artifacts/console/new-user-*.png.
 */
const PASSWORD = "a long enough password";
const DOMAIN = "newcomer.example.com";
let stack: Stack;
let dns: DnsServer;
let receiver: Receiver;
let acct: TestAccount;
let ui: ConsoleBrowser;
let page: Page;
const eventStreams: string[] = [];
const emailListRequests: number[] = [];

beforeAll(async () => {
  dns = await startDnsServer();
  receiver = await startReceiver();
  receiver.respond(() => ({ status: 200, body: "thanks, got it" }));
  stack = await startStack({ domainDns: createDomainDns({ servers: [dns.server], timeoutMs: 500, tries: 1 }) });
  acct = await stack.account();
  await createMember(stack, acct.accountId, "first@newcomer.example.com", PASSWORD);
  ui = await openConsole(stack.apiUrl);
  page = ui.page;
  page.on("request", (r) => {
    const path = new URL(r.url()).pathname;
    if (path === "/console/api/events") eventStreams.push(r.url());
    if (path === "/console/api/emails") emailListRequests.push(Date.now());
  });
}, 120_000);
afterAll(async () => {
  await ui?.browser.close();
  await receiver?.close();
  await stack?.close();
  await dns?.close();
});

/** The page at 1280 px, then at 390 px (no sideways scrolling), then back. */
async function shots(name: string) {
  await ui.shot(`new-user-${name}`);
  await page.setViewportSize({ width: 390, height: 844 });
  const overflow = await page.evaluate(() => {
    const w = globalThis as unknown as { document: { documentElement: { scrollWidth: number } }; innerWidth: number };
    return w.document.documentElement.scrollWidth - w.innerWidth;
  });
  await ui.shot(`new-user-${name}-phone`);
  await page.setViewportSize({ width: 1280, height: 800 });
  expect(overflow).toBeLessThanOrEqual(0);
}

describe("a new member, console only, from sign-in to a delivered webhook", () => {
  it("adds a domain; Verify now reports each missing record, then verifies once DNS has them", async () => {
    await ui.signIn("first@newcomer.example.com", PASSWORD);
    await page.getByRole("link", { name: "Domains" }).click();
    await page.getByText("No domains yet").waitFor(WAIT);
    await page.getByLabel("Domain", { exact: true }).fill(DOMAIN);
    await page.getByRole("button", { name: "Add domain" }).click();
    const card = page.locator("article", { has: page.getByRole("heading", { name: DOMAIN }) });
    await card.getByRole("button", { name: "Verify now" }).click();
    // Nothing published yet: every record is reported missing, the domain stays pending.
    await card.locator(".badge", { hasText: "missing" }).first().waitFor(WAIT);
    expect(await card.locator(".badge", { hasText: "missing" }).count()).toBe(4);
    await shots("domain-missing");

    const row = await stack.prisma.domain.findUniqueOrThrow({ where: { domain: DOMAIN } });
    const records = row.dnsRecords as { type: string; name: string; value: string; priority?: number }[];
    for (const r of records) {
      if (r.type === "MX") dns.set(r.name, "MX", [{ priority: r.priority ?? 10, exchange: r.value }]);
      else dns.set(r.name, "CNAME", [r.value]);
    }
    await card.getByRole("button", { name: "Verify now" }).click();
    await card.locator(".badge", { hasText: "verified" }).first().waitFor(WAIT);
    expect((await stack.prisma.domain.findUniqueOrThrow({ where: { domain: DOMAIN } })).status).toBe("verified");
    expect(dns.queries.some((q) => q.type === "MX" && q.name.toLowerCase() === DOMAIN)).toBe(true);
    await shots("domain-verified");
  });

  it("creates an endpoint (secret once), edits it with an inline error first, sends a test", async () => {
    await page.getByRole("link", { name: "Endpoints" }).click();
    await page.getByText("No endpoints yet").waitFor(WAIT);
    await page.getByLabel("URL").fill(`${receiver.url}/first`);
    await page.getByLabel("Name").fill("first draft");
    await page.getByRole("button", { name: "Create endpoint" }).click();
    expect((await page.getByTestId("endpoint-secret").textContent(WAIT))?.trim()).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "Done" }).click();

    const card = page.getByRole("article", { name: "Endpoint first draft" });
    await card.getByRole("button", { name: "Edit" }).click();
    const form = card.getByRole("form", { name: "Edit endpoint first draft" });
    await form.getByLabel("URL").fill("ftp://nope.example/hook");
    await form.getByRole("button", { name: "Save" }).click();
    const urlError = form.locator(".error");
    await urlError.waitFor(WAIT);
    expect(await form.getByLabel("URL").getAttribute("aria-invalid")).toBe("true");
    await shots("endpoint-edit-error");
    await form.getByLabel("Name", { exact: true }).fill("orders hook");
    await form.getByLabel("URL").fill(`${receiver.url}/orders`);
    await form.getByLabel("Max attempts").fill("3");
    await form.getByLabel(/Custom headers/).fill("X-Team: orders");
    await form.getByRole("button", { name: "Save" }).click();
    const edited = page.getByRole("article", { name: "Endpoint orders hook" });
    await edited.waitFor(WAIT);
    const ep = await stack.prisma.endpoint.findFirstOrThrow({ where: { accountId: acct.accountId } });
    expect(ep).toMatchObject({ name: "orders hook", url: `${receiver.url}/orders`, maxAttempts: 3 });
    expect(ep.headers).toEqual({ "X-Team": "orders" });

    await edited.getByRole("button", { name: "Send test" }).click();
    const outcome = edited.getByTestId("endpoint-test");
    await outcome.waitFor(WAIT);
    expect(await outcome.textContent()).toMatch(/^Delivered · 200 · \d+ ms/);
    expect(await outcome.textContent()).toContain("thanks, got it");
    const test = receiver.requests.find((r) => r.path === "/orders");
    expect(test?.headers["x-team"]).toBe("orders");
    await shots("endpoints");
  });

  it("creates an inbox routed to the endpoint", async () => {
    await page.getByRole("link", { name: "Inboxes" }).click();
    await page.getByLabel("Address", { exact: true }).fill("orders");
    await page.getByLabel("Deliver to").selectOption({ label: "orders hook" });
    await page.getByRole("button", { name: "Create inbox" }).click();
    await page.locator("tr", { hasText: `orders@${DOMAIN}` }).waitFor(WAIT);
    await shots("inboxes");
  });

  it("one SMTP message appears in Mail over the event stream, without a reload", async () => {
    await page.getByRole("link", { name: "Mail" }).click();
    await page.getByText("No mail yet").waitFor(WAIT);
    await page.locator('[data-testid="live"][data-state="live"]').waitFor(WAIT);
    expect(eventStreams.length).toBeGreaterThan(0);
    const listsBefore = emailListRequests.length;
    const smtp = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true });
    await smtp.sendMail({
      from: "Customer <customer@buyer.example>",
      to: `orders@${DOMAIN}`,
      subject: "Order 42",
      text: "Two boxes, please.",
      messageId: "<order-42@buyer.example>",
    });
    smtp.close();
    await page.getByRole("button", { name: "Order 42" }).waitFor({ timeout: 60_000 });
    // The list is asked again only when the stream says so (Mail polls only if the stream is refused).
    expect(emailListRequests.length - listsBefore).toBeGreaterThanOrEqual(1);
    await shots("mail");
  });

  it("opens it: headers, thread, and a reply that joins the thread", async () => {
    await page.getByRole("button", { name: "Order 42" }).click();
    await page.getByRole("heading", { name: "Order 42" }).waitFor(WAIT);
    await page.getByText("Two boxes, please.").waitFor(WAIT);
    await page.getByText("Headers").click();
    await page.locator(".headers pre", { hasText: "Message-ID: <order-42@buyer.example>" }).waitFor(WAIT);
    await page.getByRole("heading", { name: "Thread · 1 message(s)" }).waitFor(WAIT);

    await page.getByRole("button", { name: "Send reply" }).click();
    // The textarea is required: the browser keeps the empty reply from being sent.
    expect(await stack.prisma.email.count({ where: { accountId: acct.accountId, direction: "outbound" } })).toBe(0);
    await page.getByLabel("Your reply").fill("Shipped today.");
    await page.getByRole("button", { name: "Send reply" }).click();
    await page.getByRole("heading", { name: "Thread · 2 message(s)" }).waitFor(WAIT);
    const inbound = await stack.prisma.email.findFirstOrThrow({ where: { messageId: "<order-42@buyer.example>" } });
    const reply = await stack.prisma.email.findFirstOrThrow({
      where: { accountId: acct.accountId, direction: "outbound" },
    });
    expect(reply).toMatchObject({
      threadId: inbound.threadId,
      fromAddress: `orders@${DOMAIN}`,
      toAddresses: ["customer@buyer.example"],
      subject: "Re: Order 42",
      textBody: "Shipped today.",
    });
    await page.locator('.thread-list li[data-direction="outbound"]', { hasText: "Re: Order 42" }).waitFor(WAIT);
    await shots("message-thread");
  });

  it("its webhook was delivered; on Deliveries the next message's delivery shows up delivered by itself", async () => {
    const hook = await waitFor(
      async () => receiver.requests.find((r) => r.path === "/orders" && r.body.toString().includes("Order 42")),
      { what: "the webhook", timeoutMs: 60_000 },
    );
    expect(hook.headers["x-service-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    await page.getByRole("link", { name: /Deliveries/ }).click();
    await page.locator('tr[data-status="delivered"]').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="live"][data-state="live"]').waitFor(WAIT);
    const smtp = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true });
    await smtp.sendMail({
      from: "customer@buyer.example",
      to: `orders@${DOMAIN}`,
      subject: "Order 43",
      text: "One more.",
    });
    smtp.close();
    // No click, no reload: the stream's email.received and delivery.succeeded bring the new row.
    await page.locator('tr[data-status="delivered"]').nth(1).waitFor({ timeout: 60_000 });
    expect(await page.locator("tbody tr").count()).toBe(2);
    await shots("deliveries");
    expect(ui.foreign).toEqual([]);
  });
});
