import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMember, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type ConsoleBrowser, openConsole, WAIT } from "./console-browser.ts";

/**
 * A real failing delivery in the console (issue 17 item 4): one SMTP message through every
 * service, the receiver fails until the delivery is dead, the console highlights it and counts it
 * on the navigation, the receiver comes back, Retry in the page, and the dispatcher delivers it.
 */
const PASSWORD = "a long enough password";
let stack: Stack;
let acct: TestAccount;
let receiver: Receiver;
let ui: ConsoleBrowser;
let up = false;
let deliveryId: string;

beforeAll(async () => {
  receiver = await startReceiver();
  receiver.respond(() => (up ? { status: 200, body: "ok" } : { status: 503, body: "down for maintenance" }));
  stack = await startStack({ backoffUnitMs: 20 });
  acct = await stack.account();
  const dom = await acct.api("POST", "/api/v1/domains", { domain: "journey-dead.example.com" });
  await stack.admin("domains", "verify", "--domain", "journey-dead.example.com", "--force");
  const ep = await acct.api("POST", "/api/v1/endpoints", {
    name: "flaky",
    url: `${receiver.url}/hook`,
    maxAttempts: 2,
  });
  await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "orders", endpointId: ep.body.id });
  await createMember(stack, acct.accountId, "ops@journey-dead.example.com", PASSWORD, { cheapHash: true });
  ui = await openConsole(stack.apiUrl);
}, 120_000);
afterAll(async () => {
  await ui?.browser.close();
  await receiver?.close();
  await stack?.close();
});

describe("a dead delivery, in the console", () => {
  it("SMTP message → appears in Mail without a reload; its HTML is sandboxed and loads nothing remote", async () => {
    await ui.signIn("ops@journey-dead.example.com", PASSWORD);
    const page = ui.page;
    await page.getByRole("link", { name: "Mail" }).click();
    await page.getByText("No mail yet").waitFor(WAIT);
    const smtp = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true });
    await smtp.sendMail({
      from: "a@sender.example",
      to: "orders@journey-dead.example.com",
      subject: "order 1",
      text: "plain part",
      html: `<p>Order <b>one</b></p><img src="${receiver.url}/pixel.png" alt="tracker">`,
    });
    smtp.close();
    // Polling brings it in; nothing reloads the page.
    await page.getByRole("button", { name: "order 1" }).click();
    await page.getByRole("heading", { name: "order 1" }).waitFor(WAIT);
    const frame = page.frameLocator('iframe[title="HTML body"]');
    await frame.getByText("Order one").waitFor(WAIT);
    expect(await page.locator('iframe[title="HTML body"]').getAttribute("sandbox")).toBe("");
    expect(receiver.requests.filter((r) => r.path === "/pixel.png")).toEqual([]);
    expect(await page.locator(".badges").textContent()).toMatch(/SPF .*DKIM .*DMARC .*ARC GRAY.*Spam .*Virus GRAY/);
    await ui.shot("mail-message");
  });

  it("its delivery fails until dead: highlighted and counted; retry from the page delivers it", async () => {
    const dead = await waitFor(
      () => stack.prisma.delivery.findFirst({ where: { accountId: acct.accountId, status: "dead" } }),
      { what: "the delivery to die", timeoutMs: WAIT.timeout },
    );
    deliveryId = dead.id;
    expect(receiver.requests.filter((r) => r.path === "/hook")).toHaveLength(2);

    const page = ui.page;
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByTestId("dead-count").filter({ hasText: "1" }).waitFor(WAIT);
    await page.getByRole("link", { name: /Deliveries/ }).click();
    const row = page.locator('tr[data-status="dead"]', { hasText: deliveryId });
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain("HTTP 503");
    await row.getByRole("button", { name: /^Attempts of / }).click();
    const timeline = (await page.getByRole("list", { name: `Attempts of ${deliveryId}` }).textContent(WAIT)) ?? "";
    expect(timeline).toContain("down for maintenance");
    await ui.shot("journey-dead");

    up = true;
    await page.getByRole("button", { name: `Retry delivery ${deliveryId}` }).click();
    await waitFor(() => stack.prisma.delivery.findFirst({ where: { id: deliveryId, status: "delivered" } }), {
      what: "the retried delivery to be delivered",
      timeoutMs: WAIT.timeout,
    });
    await page.getByLabel("Status").selectOption("delivered");
    await page.locator('tr[data-status="delivered"]', { hasText: deliveryId }).waitFor(WAIT);
    await page.getByTestId("dead-count").waitFor({ state: "detached", ...WAIT });
    await ui.shot("journey-delivered");
    expect(ui.foreign).toEqual([]);
  }, 180_000);
});
