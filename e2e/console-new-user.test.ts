import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createDomainDns } from "@mailroom/domain-verification";
import { type DnsServer, type Receiver, startDnsServer, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import type { Page } from "playwright-core";
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
/** While true the receiver answers 503 on /orders (the inbox's endpoint). */
let down = false;
/** The one-time link the operator's `members create` printed. */
let setPasswordLink: string;

beforeAll(async () => {
  dns = await startDnsServer();
  receiver = await startReceiver();
  receiver.respond((r) =>
    down && r.path === "/orders"
      ? { status: 503, body: "down for maintenance" }
      : { status: 200, body: "thanks, got it" },
  );
  stack = await startStack({
    backoffUnitMs: 20,
    domainDns: createDomainDns({ servers: [dns.server], timeoutMs: 10_000, tries: 1 }),
  });
  acct = await stack.account();
  const m = await stack.admin(
    "members",
    "create",
    "--account",
    acct.accountId,
    "--email",
    "first@newcomer.example.com",
  );
  setPasswordLink = String(m.setPasswordUrl);
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

/** The browser's document, as far as these checks use it (this file compiles without the DOM library). */
type El = {
  id: string;
  textContent: string | null;
  getAttribute(name: string): string | null;
  closest(sel: string): El | null;
};
type Doc = { activeElement: El | null };

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
  it("sets a password through the one-time link (a mismatch is refused inline first)", async () => {
    const { hash } = new URL(setPasswordLink);
    await page.goto(`${stack.apiUrl}/console/set-password${hash}`);
    await page.getByLabel(/New password/).fill(PASSWORD);
    await page.getByLabel("Repeat it").fill(`${PASSWORD}!`);
    await page.getByRole("button", { name: "Set password" }).click();
    await page.getByRole("alert").filter({ hasText: "The two passwords differ" }).waitFor(WAIT);
    await page.getByLabel("Repeat it").fill(PASSWORD);
    await page.getByRole("button", { name: "Set password" }).click();
    await page.getByRole("heading", { name: "Password set" }).waitFor(WAIT);
    await shots("password-set");
    const member = await stack.prisma.member.findUniqueOrThrow({ where: { email: "first@newcomer.example.com" } });
    expect(member.passwordHash).toBeTruthy();
    await page.getByRole("button", { name: "Go to sign-in" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor(WAIT);
  });

  it("signs in and adds a domain with the keyboard alone", async () => {
    await page.goto(`${stack.apiUrl}/console/`);
    await page.getByRole("button", { name: "Sign in" }).waitFor(WAIT);
    const focused = () =>
      page.evaluate(() => (globalThis as unknown as { document: Doc }).document.activeElement?.id ?? "");
    const focusedLabel = () =>
      page.evaluate(() => {
        const el = (globalThis as unknown as { document: Doc }).document.activeElement;
        return (
          el?.getAttribute("aria-label") ?? el?.closest("label")?.textContent?.trim() ?? el?.textContent?.trim() ?? ""
        );
      });
    await page.keyboard.press("Tab");
    expect(await focusedLabel()).toBe("Email");
    await page.keyboard.type("first@newcomer.example.com");
    await page.keyboard.press("Tab");
    expect(await focusedLabel()).toBe("Password");
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Sign out" }).waitFor(WAIT);
    // Tab to the Domains link of the navigation and follow it with Enter.
    for (let i = 0; i < 20 && (await focusedLabel()) !== "Domains"; i++) await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.getByText("No domains yet").waitFor(WAIT);
    for (let i = 0; i < 20 && (await focused()) !== "new-domain"; i++) await page.keyboard.press("Tab");
    await page.keyboard.type(DOMAIN);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: DOMAIN }).waitFor(WAIT);
  });

  it("Verify now reports each missing record, then verifies once DNS has them", async () => {
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

  it("creates Slack and email endpoints through the type select; the Slack test posts Slack's JSON", async () => {
    await page.getByLabel("URL").fill(`${receiver.url}/slack`);
    await page.getByLabel("Name").fill("team slack");
    await page.getByLabel("Type").selectOption("slack");
    await page.getByRole("button", { name: "Create endpoint" }).click();
    const slack = page.getByRole("article", { name: "Endpoint team slack" });
    await slack.waitFor(WAIT);
    // Chat endpoints are not signed: no secret to show or rotate.
    expect(await slack.getByRole("button", { name: "Rotate secret" }).count()).toBe(0);
    expect(await page.getByTestId("endpoint-secret").count()).toBe(0);
    await slack.getByRole("button", { name: "Send test" }).click();
    await slack.getByTestId("endpoint-test").waitFor(WAIT);
    const posted = receiver.requests.find((r) => r.path === "/slack");
    expect(JSON.parse(posted?.body.toString() ?? "{}")).toMatchObject({
      text: expect.any(String),
      blocks: expect.any(Array),
    });

    await page.getByLabel("URL").fill("mailto:ops@newcomer.example.com");
    await page.getByLabel("Name").fill("ops mailbox");
    await page.getByLabel("Type").selectOption("email");
    await page.getByRole("button", { name: "Create endpoint" }).click();
    const mailbox = page.getByRole("article", { name: "Endpoint ops mailbox" });
    await mailbox.waitFor(WAIT);
    // An email endpoint edits its name, address and attempts; it has no timeout or headers.
    await mailbox.getByRole("button", { name: "Edit" }).click();
    const form = mailbox.getByRole("form", { name: "Edit endpoint ops mailbox" });
    expect(await form.getByLabel("Timeout (s)").count()).toBe(0);
    expect(await form.getByLabel(/Custom headers/).count()).toBe(0);
    await form.getByLabel("Name", { exact: true }).fill("ops inbox");
    await form.getByRole("button", { name: "Save" }).click();
    await page.getByRole("article", { name: "Endpoint ops inbox" }).waitFor(WAIT);
    const types = await stack.prisma.endpoint.findMany({
      where: { accountId: acct.accountId },
      select: { type: true },
    });
    expect(types.map((t) => t.type).sort()).toEqual(["email", "slack", "webhook"]);
    await shots("endpoint-types");
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
      attachments: [{ filename: "po-42.txt", content: "purchase order 42", contentType: "text/plain" }],
    });
    smtp.close();
    await page.getByRole("button", { name: "Order 42" }).waitFor(WAIT);
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
    // The attachment and the raw message download through the session, byte for byte.
    const [attachment] = await Promise.all([
      page.waitForEvent("download", WAIT),
      page.getByRole("link", { name: "po-42.txt" }).click(),
    ]);
    expect(attachment.suggestedFilename()).toBe("po-42.txt");
    expect(readFileSync(await attachment.path()).toString()).toBe("purchase order 42");
    const [raw] = await Promise.all([
      page.waitForEvent("download", WAIT),
      page.getByRole("link", { name: "Download .eml" }).click(),
    ]);
    expect(raw.suggestedFilename()).toMatch(/^em_.*\.eml$/);
    expect(readFileSync(await raw.path()).toString()).toContain("Message-ID: <order-42@buyer.example>");

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
      { what: "the webhook", timeoutMs: WAIT.timeout },
    );
    expect(hook.headers["x-service-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    await page.getByRole("link", { name: /Deliveries/ }).click();
    await page.locator('tr[data-status="delivered"]').waitFor(WAIT);
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
    await page.locator('tr[data-status="delivered"]').nth(1).waitFor(WAIT);
    expect(await page.locator("tbody tr").count()).toBe(2);
    await shots("deliveries");
    expect(ui.foreign).toEqual([]);
  });

  it("the receiver fails: the delivery dies on the page by itself; Retry all dead of the endpoint delivers it", async () => {
    down = true;
    const smtp = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true });
    await smtp.sendMail({
      from: "customer@buyer.example",
      to: `orders@${DOMAIN}`,
      subject: "Order 44",
      text: "Urgent.",
    });
    smtp.close();
    const dead = page.locator('tr[data-status="dead"]');
    await dead.waitFor(WAIT);
    await page.getByTestId("dead-count").filter({ hasText: "1" }).waitFor(WAIT);
    await shots("deliveries-dead");
    down = false;
    await page.getByRole("button", { name: "Retry all dead deliveries of endpoint orders hook" }).click();
    await dead.waitFor({ state: "detached", ...WAIT });
    await page.getByTestId("dead-count").waitFor({ state: "detached", ...WAIT });
    const rows = await stack.prisma.delivery.findMany({ where: { accountId: acct.accountId } });
    await waitFor(
      async () =>
        (await stack.prisma.delivery.count({ where: { accountId: acct.accountId, status: "delivered" } })) ===
        rows.length,
      { what: "every delivery delivered", timeoutMs: WAIT.timeout },
    );
    await page.locator('tr[data-status="delivered"]').nth(2).waitFor(WAIT);
  });
});
