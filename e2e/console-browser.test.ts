import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMember, type Fixture, type Stack, seedEverything, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, seedEmail, startReceiver } from "@mailroom/testing";
import type { Page } from "playwright-core";
import { type ConsoleBrowser, openConsole, WAIT } from "./console-browser.ts";

/**
 * The console in a real browser (issue 17 item 4): every page against a seeded account, Debian's
 * chromium driven by playwright-core. Screenshots: test-artifacts/console/.
 */
const PASSWORD = "a long enough password";

let stack: Stack;
let acct: TestAccount;
let f: Fixture;
let receiver: Receiver;
let ui: ConsoleBrowser;
let page: Page;
let foreign: string[];

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
  acct = await stack.account({ plan: "free" });
  f = await seedEverything(stack, acct, "browser.example.com");
  // Two more messages today: the overview shows 3.
  await seedEmail(stack.prisma, acct.accountId, { domainId: f.domainId });
  await seedEmail(stack.prisma, acct.accountId, { domainId: f.domainId });
  await createMember(stack, acct.accountId, "owner@browser.example.com", PASSWORD, { cheapHash: true });
  ui = await openConsole(stack.apiUrl);
  page = ui.page;
  foreign = ui.foreign;
}, 120_000);
afterAll(async () => {
  await ui?.browser.close();
  await receiver?.close();
  await stack?.close();
});

/** The browser globals used inside page.evaluate (this file compiles without the DOM library). */
type Win = {
  getComputedStyle(el: unknown): { backgroundColor: string };
  document: { documentElement: { scrollWidth: number } };
  innerWidth: number;
};

const shot = (name: string) => ui.shot(name);

describe("console in chromium", () => {
  it("signs in, with a wrong password shown inline first", async () => {
    await page.goto(`${stack.apiUrl}/console/`);
    await page.getByLabel("Email").fill("owner@browser.example.com");
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "Wrong email or password" }).waitFor(WAIT);
    await shot("sign-in-error");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "test" }).waitFor(WAIT);
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === "mailroom_console")).toMatchObject({ httpOnly: true, sameSite: "Lax" });
  });

  it("overview shows the plan, rule cap, allotment used, mail today and failing deliveries", async () => {
    const text = async (id: string) => ((await page.getByTestId(id).textContent()) ?? "").replace(/\s+/g, " ");
    await page.getByTestId("mail-today").waitFor(WAIT);
    expect(await text("plan")).toContain("free");
    expect(await text("rules")).toContain("1 / 3");
    expect(await text("mail-today")).toContain("3");
    expect(await text("failing")).toContain("1 dead · 0 retrying");
    expect(await page.getByTestId("failing").getAttribute("class")).toContain("alert");
    expect(await page.getByTestId("dead-count").textContent()).toBe("1");
    await shot("overview");
  });

  it("deliveries: the dead one is highlighted, the nav counts it, retry re-opens it", async () => {
    await page.getByRole("link", { name: /Deliveries/ }).click();
    const row = page.locator(`tr[data-status="dead"]`, { hasText: f.deliveryId as string });
    await row.waitFor(WAIT);
    expect(await row.getAttribute("class")).toBe("dead");
    const bg = await row.evaluate((el) => (globalThis as unknown as Win).getComputedStyle(el).backgroundColor);
    expect(bg).not.toBe("rgba(0, 0, 0, 0)");
    // The attempt timeline: status code, duration, error and the response excerpt.
    await row.getByRole("button", { name: /^Attempts of / }).click();
    const timeline = page.getByRole("list", { name: `Attempts of ${f.deliveryId}` });
    await timeline.waitFor(WAIT);
    const attempt = (await timeline.textContent()) ?? "";
    expect(attempt).toContain("#1");
    expect(attempt).toContain("500 · 12 ms");
    expect(attempt).toContain("HTTP 500");
    expect(attempt).toContain("oops");
    await shot("deliveries-dead");

    await page.getByRole("button", { name: `Retry delivery ${f.deliveryId}` }).click();
    await page.locator(`tr[data-status="pending"]`, { hasText: f.deliveryId as string }).waitFor(WAIT);
    await page.getByTestId("dead-count").waitFor({ state: "detached", ...WAIT });
    const d = await stack.prisma.delivery.findUniqueOrThrow({ where: { id: f.deliveryId as string } });
    expect(d.status).toBe("pending");
    await shot("deliveries-retried");
  });

  it("domains: an invalid name is refused inline; a new domain lists its records; CLI force-verify shows verified; catch-all on", async () => {
    await page.getByRole("link", { name: "Domains" }).click();
    await page.getByRole("heading", { name: "browser.example.com" }).waitFor(WAIT);
    await page.getByLabel("Domain", { exact: true }).fill("not a domain");
    await page.getByRole("button", { name: "Add domain" }).click();
    await page.locator("#new-domain-error").waitFor(WAIT);
    await page.getByLabel("Domain", { exact: true }).fill("journey.example.com");
    await page.getByRole("button", { name: "Add domain" }).click();
    const card = page.locator("article", { has: page.getByRole("heading", { name: "journey.example.com" }) });
    await card.waitFor(WAIT);
    expect(await card.locator("tbody tr").count()).toBe(4); // MX + three DKIM CNAMEs
    expect(await card.locator(".badge").first().textContent()).toBe("pending");
    await shot("domains-pending");

    await stack.admin("domains", "verify", "--domain", "journey.example.com", "--force");
    await page.reload();
    await card.locator(".badge", { hasText: "verified" }).first().waitFor(WAIT);
    // A controlled checkbox: it turns checked once the PATCH answered and the list reloaded.
    await card.getByLabel(/Catch-all \(mail to any address/).click();
    await card
      .getByLabel(/Catch-all \(mail to any address/)
      .and(page.locator(":checked"))
      .waitFor(WAIT);
    const row = await stack.prisma.domain.findUniqueOrThrow({ where: { domain: "journey.example.com" } });
    expect(row).toMatchObject({ status: "verified", catchAllEnabled: true, catchAllEndpointId: null });
    await shot("domains-verified");
  });

  it("endpoints: create shows the secret once, send test reports status and time, rotate, pause", async () => {
    await page.getByRole("link", { name: "Endpoints" }).click();
    await page.getByLabel("URL").fill(`${receiver.url}/console-hook`);
    await page.getByLabel("Name").fill("console hook");
    await page.getByRole("button", { name: "Create endpoint" }).click();
    const secret = ((await page.getByTestId("endpoint-secret").textContent(WAIT)) ?? "").trim();
    expect(secret).toMatch(/^whsec_/);
    const card = page.getByRole("article", { name: "Endpoint console hook" });
    await card.getByRole("button", { name: "Send test" }).click();
    const outcome = card.getByTestId("endpoint-test");
    await outcome.waitFor(WAIT);
    expect(await outcome.textContent()).toMatch(/^Delivered · 200 · \d+ ms/);
    const hit = receiver.requests.find((r) => r.path === "/console-hook");
    expect(hit?.headers["x-service-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    await shot("endpoints-tested");

    await card.getByRole("button", { name: "Rotate secret" }).click();
    await page.getByTestId("endpoint-secret").filter({ hasNotText: secret }).waitFor(WAIT);
    await card.getByRole("button", { name: "Pause" }).click();
    await card.getByText("paused").waitFor(WAIT);
    const row = await stack.prisma.endpoint.findFirstOrThrow({
      where: { accountId: acct.accountId, name: "console hook" },
    });
    expect(row.active).toBe(false);
    expect(row.secret).not.toBe(secret);
  });

  it("inboxes: create an address routed to an endpoint, deactivate it", async () => {
    await page.getByRole("link", { name: "Inboxes" }).click();
    await page.getByLabel("Address", { exact: true }).fill("support");
    await page.getByLabel("Domain", { exact: true }).selectOption({ label: "@journey.example.com" });
    await page.getByLabel("Deliver to").selectOption({ label: "console hook" });
    await page.getByRole("button", { name: "Create inbox" }).click();
    const row = page.locator("tr", { hasText: "support@journey.example.com" });
    await row.waitFor(WAIT);
    await row.getByRole("button", { name: "Deactivate support@journey.example.com" }).click();
    await row.getByText("inactive").waitFor(WAIT);
    const a = await stack.prisma.address.findFirstOrThrow({
      where: { accountId: acct.accountId, localPart: "support" },
    });
    const ep = await stack.prisma.endpoint.findFirstOrThrow({
      where: { accountId: acct.accountId, name: "console hook" },
    });
    expect(a).toMatchObject({ active: false, endpointId: ep.id });
    // The catch-all turned on in the domains test is listed with where it goes.
    const catchAll = page.getByRole("list", { name: "Catch-all domains" });
    expect((await catchAll.textContent())?.replace(/\s+/g, " ")).toContain("*@journey.example.com → store only");
    await shot("inboxes");
  });

  it("API keys: create shows the key once and it works; revoke makes the API answer 401", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("from the browser");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = ((await page.getByTestId("new-key").textContent(WAIT)) ?? "").trim();
    expect(key).toMatch(/^svc_/);
    const use = () => fetch(`${stack.apiUrl}/api/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    expect((await use()).status).toBe(200);
    await shot("api-keys-created");
    await page.getByRole("button", { name: `Revoke key ${key.slice(0, 12)}` }).click();
    await page.getByText(/^revoked /).waitFor(WAIT);
    expect((await use()).status).toBe(401);
    await shot("api-keys-revoked");
  });

  it("usable at phone width", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByTestId("mail-today").waitFor(WAIT);
    const overflow = await page.evaluate(() => {
      const w = globalThis as unknown as Win;
      return w.document.documentElement.scrollWidth - w.innerWidth;
    });
    expect(overflow).toBeLessThanOrEqual(0);
    await shot("overview-phone");
  });

  it("signs out, and made no request to another host", async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor(WAIT);
    expect((await page.context().cookies()).find((c) => c.name === "mailroom_console")).toBeUndefined();
    expect(foreign).toEqual([]);
  });
});
