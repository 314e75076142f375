import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMember, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import type { Page } from "playwright-core";
import { type ConsoleBrowser, openConsole, WAIT } from "./console-browser.ts";

/**
 * The message timeline and Settings (members, retention) in Chromium (issue 26 items 3-5), on real
 * data: two messages over SMTP, one to an endpoint that answers 503 until its delivery is dead, one
 * routed by a shield rule to an endpoint that answers 200. What the pages show is checked against
 * Postgres. Screenshots at 1280 and 390 px go to test-artifacts/console/, and to docs/ (the README
 * shows them) with UPDATE_DOCS_SCREENSHOTS=1, so a test run never leaves the checkout changed.
 */
const PASSWORD = "a long enough password";
const DOMAIN = "timeline-ui.example.com";
const ME = `ops@${DOMAIN}`;
const TEAMMATE = `teammate@${DOMAIN}`;
const DOCS = join(import.meta.dirname, "../docs");
const SHOTS = join(import.meta.dirname, "../test-artifacts/console");
let stack: Stack;
let acct: TestAccount;
let receiver: Receiver;
let ui: ConsoleBrowser;

async function send(subject: string, to = `orders@${DOMAIN}`) {
  const smtp = nodemailer.createTransport({
    host: "127.0.0.1",
    port: stack.smtpPort,
    ignoreTLS: true,
    name: "mx.sender.example",
  });
  await smtp.sendMail({
    from: "Billing <billing@sender.example>",
    to,
    subject,
    text: `About ${subject}.\n`,
  });
  smtp.close();
}

/** The email with this subject once every delivery of it has finished (delivered or dead). */
const settled = (subject: string) =>
  waitFor(
    async () => {
      const e = await stack.prisma.email.findFirst({
        where: { accountId: acct.accountId, subject },
        include: { spool: true, deliveries: { include: { attempts: { orderBy: { number: "asc" } } } } },
      });
      const done =
        e && e.deliveries.length > 0 && e.deliveries.every((d) => d.status === "delivered" || d.status === "dead");
      return done ? e : null;
    },
    { what: `"${subject}" delivered or dead`, timeoutMs: WAIT.timeout },
  );

beforeAll(async () => {
  receiver = await startReceiver();
  receiver.respond((req) =>
    req.path === "/flaky" ? { status: 503, body: "upstream down for maintenance" } : { status: 200, body: "thanks" },
  );
  stack = await startStack({ backoffUnitMs: 20 });
  acct = await stack.account();
  const dom = await acct.api("POST", "/api/v1/domains", { domain: DOMAIN });
  await stack.admin("domains", "verify", "--domain", DOMAIN, "--force");
  const ep = async (name: string, path: string, maxAttempts: number) =>
    (await acct.api("POST", "/api/v1/endpoints", { name, url: `${receiver.url}/${path}`, maxAttempts })).body
      .id as string;
  const flaky = await ep("Orders webhook", "flaky", 3);
  const accounting = await ep("Accounting", "ok", 2);
  await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "orders", endpointId: flaky });
  const rule = await acct.api("POST", "/api/v1/shield-rules", {
    name: "Invoices to accounting",
    action: "route",
    conditions: [{ field: "subject", operator: "contains", value: "invoice" }],
    endpointIds: [accounting],
  });
  expect(rule.status).toBe(201);
  await createMember(stack, acct.accountId, ME, PASSWORD, { cheapHash: true });
  await stack.admin("members", "create", "--account", acct.accountId, "--email", TEAMMATE);
  // Store-only: kept, delivered nowhere.
  await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "archive" });
  await acct.api("PATCH", "/api/v1/account", { name: "Acme Mail" });
  await send("Order 1001");
  await send("Invoice 42");
  await send("Quarterly archive", `archive@${DOMAIN}`);
  ui = await openConsole(stack.apiUrl);
}, 300_000);
afterAll(async () => {
  await ui?.browser.close();
  await receiver?.close();
  await stack?.close();
});

async function shoot(page: Page, name: string) {
  const png = await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  if (process.env.UPDATE_DOCS_SCREENSHOTS === "1") await writeFile(join(DOCS, `${name}.png`), png);
}

async function openMessage(page: Page, subject: string) {
  await page.getByRole("link", { name: "Mail" }).click();
  await page.getByRole("button", { name: subject }).click();
  await page.getByRole("heading", { name: subject }).waitFor(WAIT);
  await page.getByTestId("timeline").waitFor(WAIT);
}

/** How far the navigation's links reach past what it shows (0: every link in view, nothing to scroll). */
const navHidden = (page: Page) =>
  page.locator("nav[aria-label=Console]").evaluate((n) => n.scrollWidth - n.clientWidth);

/** Every navigation link's top edge: one line when they are all equal. */
const navTops = (page: Page) =>
  page
    .locator("nav[aria-label=Console] a")
    .evaluateAll((as) => as.map((a) => Math.round(a.getBoundingClientRect().top)));

const overflowX = (page: Page) =>
  page.evaluate(() => {
    const w = globalThis as unknown as { document: { documentElement: { scrollWidth: number } }; innerWidth: number };
    return w.document.documentElement.scrollWidth - w.innerWidth;
  });

describe("a message's timeline, in the console", () => {
  it("a dead delivery: received, verdicts, no rule, stored, and each failed attempt as Postgres has it", async () => {
    const email = await settled("Order 1001");
    const [delivery] = email.deliveries;
    expect(delivery?.status).toBe("dead");
    await ui.signIn(ME, PASSWORD);
    const page = ui.page;
    expect(new Set(await navTops(page)).size).toBe(1);
    expect(await navHidden(page)).toBeLessThanOrEqual(0);
    await openMessage(page, "Order 1001");

    const steps = page.getByTestId("timeline").locator(":scope > li");
    expect(await steps.evaluateAll((li) => li.map((l) => l.getAttribute("data-step")))).toEqual([
      "received",
      "authenticated",
      "shield",
      "stored",
      "delivery",
    ]);
    const received = page.locator('li[data-step="received"]');
    expect(await received.textContent()).toContain(String(email.spool?.remoteIp));
    expect(await received.textContent()).toContain("HELO mx.sender.example");
    expect(await received.textContent()).toContain("no TLS");
    expect(await page.locator('li[data-step="received"] time').getAttribute("datetime")).toBe(
      email.spool?.receivedAt.toISOString(),
    );
    expect(await page.locator('li[data-step="received"] time').getAttribute("title")).toContain(
      email.spool?.receivedAt.toISOString(),
    );
    const verdicts = page.locator('li[data-step="authenticated"]');
    expect(await verdicts.textContent()).toContain(`SPF ${email.spfVerdict}`);
    expect(await verdicts.textContent()).toContain(`Virus ${email.virusVerdict}`);
    expect(await page.locator('li[data-step="shield"]').textContent()).toContain("No shield rule matched");

    const d = page.locator('li[data-step="delivery"]');
    expect(await d.textContent()).toContain("Delivery to Orders webhook");
    expect(await d.locator(".badge").textContent()).toBe("dead");
    expect(await d.textContent()).toContain(`${delivery?.attemptCount} of ${delivery?.maxAttempts} attempts`);
    const attempts = d.getByTestId("timeline-attempt");
    expect(await attempts.count()).toBe(delivery?.attempts.length);
    expect(await attempts.count()).toBe(3);
    for (const [i, a] of (delivery?.attempts ?? []).entries()) {
      const line = attempts.nth(i);
      expect(await line.textContent()).toContain(`#${a.number}`);
      expect(await line.textContent()).toContain("503");
      expect(await line.textContent()).toContain(`${a.durationMs} ms`);
      expect(await line.textContent()).toContain("upstream down for maintenance");
      expect(await line.locator("time").getAttribute("datetime")).toBe(a.startedAt.toISOString());
    }
    await page.locator(".message-timeline").scrollIntoViewIfNeeded();
    await shoot(page, "console-timeline");
  });

  it("a routed message: the rule that decided, each condition, and the delivered attempt", async () => {
    const email = await settled("Invoice 42");
    const page = ui.page;
    await page.getByRole("button", { name: "← All mail" }).click();
    await openMessage(page, "Invoice 42");
    const shield = page.locator('li[data-step="shield"]');
    expect(await shield.textContent()).toContain("Shield rule “Invoices to accounting” routed it");
    expect(await shield.locator(".conditions-trace li").allTextContents()).toEqual([
      expect.stringMatching(/✓ subject contains “invoice” \(matched\)/),
    ]);
    const d = page.locator('li[data-step="delivery"]');
    expect(await d.textContent()).toContain("Delivery to Accounting");
    expect(await d.locator(".badge").textContent()).toBe("delivered");
    expect(await d.getByTestId("timeline-attempt").count()).toBe(email.deliveries[0]?.attempts.length);
    expect(await d.getByTestId("timeline-attempt").textContent()).toContain("200");

    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId("timeline").waitFor(WAIT);
    expect(await overflowX(page)).toBeLessThanOrEqual(0);
    await shoot(page, "console-timeline-390");
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});

describe("the timeline's empty, error and retry states", () => {
  it("a store-only message says it went nowhere; a failed load offers Try again, which loads it", async () => {
    await waitFor(
      () => stack.prisma.email.findFirst({ where: { accountId: acct.accountId, subject: "Quarterly archive" } }),
      {
        what: "the archived message stored",
        timeoutMs: WAIT.timeout,
      },
    );
    const page = ui.page;
    await page.getByRole("button", { name: "← All mail" }).click();
    await openMessage(page, "Quarterly archive");
    await page.getByRole("heading", { name: "No deliveries" }).waitFor(WAIT);
    expect(await page.locator('li[data-step="delivery"]').count()).toBe(0);

    // The network drops the timeline's request: the error and a way to try again, not a blank.
    await page.route("**/events", (route) => route.abort());
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.getByRole("alert").filter({ hasText: "Could not reach the server" }).waitFor(WAIT);
    await page.unroute("**/events");
    await page.getByRole("button", { name: "Try again" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: "Could not reach the server" })
      .waitFor({ state: "detached", ...WAIT });
    await page.getByTestId("timeline").waitFor(WAIT);
  });
});

describe("Settings: members and retention, in the console", () => {
  const accountMembers = () =>
    stack.prisma.member.findMany({ where: { accountId: acct.accountId }, orderBy: { createdAt: "asc" } });

  it("lists the members as Postgres has them; invites with a link shown once; removes a teammate", async () => {
    const page = ui.page;
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("heading", { name: "Members" }).waitFor(WAIT);
    const rows = page.getByTestId("member-row");
    await rows.first().waitFor(WAIT);
    expect(await rows.allTextContents()).toEqual((await accountMembers()).map((m) => expect.stringContaining(m.email)));
    expect(await rows.filter({ hasText: TEAMMATE }).textContent()).toContain("invited: link not used yet");
    expect(await rows.filter({ hasText: ME }).textContent()).toContain("you");
    expect(await page.getByTestId("default-retention").textContent()).toBe("30 days");

    await page.getByLabel("Email", { exact: true }).fill(`new.hire@${DOMAIN}`);
    await page.getByRole("button", { name: "Invite" }).click();
    const link = await page.getByTestId("invite-link").textContent();
    expect(link).toMatch(/\/console\/set-password#token=/);
    const token = String(link).split("#token=")[1] ?? "";
    const invited = await stack.prisma.member.findUniqueOrThrow({
      where: { email: `new.hire@${DOMAIN}` },
      include: { tokens: true },
    });
    expect(invited.accountId).toBe(acct.accountId);
    expect(invited.tokens.map((t) => t.hash)).toContain(createHash("sha256").update(token).digest("hex"));
    await rows.filter({ hasText: `new.hire@${DOMAIN}` }).waitFor(WAIT);
    expect(await rows.count()).toBe((await accountMembers()).length);
    await shoot(page, "console-members");
    await page.getByRole("button", { name: "Done" }).click();

    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: `Remove ${TEAMMATE}` }).click();
    await rows.filter({ hasText: TEAMMATE }).waitFor({ state: "detached", ...WAIT });
    expect((await accountMembers()).map((m) => m.email)).toEqual([ME, `new.hire@${DOMAIN}`]);
  });

  it("changes the retention, stored in Postgres; usable at 390 px; the nav on one line at 1280", async () => {
    const page = ui.page;
    await page.getByLabel("Days to keep mail").fill("14");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved: mail is kept 14 days.").waitFor(WAIT);
    expect((await stack.prisma.account.findUniqueOrThrow({ where: { id: acct.accountId } })).retentionDays).toBe(14);
    expect(new Set(await navTops(page)).size).toBe(1);
    expect(await navHidden(page)).toBeLessThanOrEqual(0);
    // The overview says how long mail is kept, and what new accounts get.
    await page.getByRole("link", { name: "Overview" }).click();
    const kept = page.getByTestId("retention");
    await kept.filter({ hasText: "14 days" }).waitFor(WAIT);
    expect(await kept.textContent()).toContain("New accounts: 30 days");
    expect(await page.getByRole("heading", { name: "Acme Mail" }).count()).toBe(1);
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("heading", { name: "Members" }).waitFor(WAIT);

    await page.setViewportSize({ width: 390, height: 844 });
    // As a phone opens it: loaded at 390 px.
    await page.reload();
    await page.getByRole("heading", { name: "Members" }).waitFor(WAIT);
    await page.getByTestId("member-row").first().waitFor(WAIT);
    expect(await overflowX(page)).toBeLessThanOrEqual(0);
    // The navigation is one scrollable row of its own at phone width, the current page in view.
    expect(new Set(await navTops(page)).size).toBe(1);
    const current = await page.locator('nav[aria-label=Console] a[aria-current="page"]').boundingBox();
    expect(current && current.x >= 0 && current.x + current.width <= 390).toBe(true);
    await shoot(page, "console-members-390");
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(ui.foreign).toEqual([]);
  });
});
