import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId } from "@mailroom/db";
import { createMember, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { seedEmail } from "@mailroom/testing";
import type { Page } from "playwright-core";
import { type ConsoleBrowser, openConsole, WAIT } from "./console-browser.ts";

/**
 * Long lists in the console (issue 17): Mail shows 50 at a time with "Older"/"Newest" (the API's
 * cursor), the sender and direction filters narrow it, Deliveries pages 100 at a time and the block
 * log 25. Emails, deliveries and block records are seeded in Postgres with known times and order.
 */
const PASSWORD = "a long enough password";
let stack: Stack;
let acct: TestAccount;
let ui: ConsoleBrowser;
let page: Page;
const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000);

beforeAll(async () => {
  stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
  acct = await stack.account();
  // mail 1 is the oldest, mail 60 the newest; every tenth is from boss@ and sent by us (outbound).
  const mails: string[] = [];
  for (let i = 1; i <= 60; i++) {
    const m = await seedEmail(stack.prisma, acct.accountId, {
      subject: `mail ${i}`,
      fromAddress: i % 10 === 0 ? "boss@paging.example" : `sender${i}@paging.example`,
      direction: i % 10 === 0 ? "outbound" : "inbound",
      receivedAt: minutesAgo(61 - i),
    });
    mails.push(m.id);
  }
  for (let i = 1; i <= 30; i++) {
    await stack.prisma.blockRecord.create({
      data: {
        id: newId("block"),
        accountId: acct.accountId,
        ruleId: null,
        ruleName: "spam",
        sender: `spammer${i}@bad.example`,
        recipient: "info@paging.example",
        subject: `blocked ${i}`,
        receivedAt: minutesAgo(31 - i),
      },
    });
  }
  // 105 deliveries (the 60 emails to a first endpoint, 45 of them to a second; one per email and
  // endpoint), one second apart: delivery 105 is the newest.
  const hooks: string[] = [];
  for (const name of ["pager hook", "second hook"]) {
    hooks.push((await acct.api("POST", "/api/v1/endpoints", { name, url: "http://127.0.0.1:9/hook" })).body.id);
  }
  await stack.prisma.delivery.createMany({
    data: Array.from({ length: 105 }, (_, k) => ({
      id: `dlv_paging${String(k + 1).padStart(3, "0")}`,
      accountId: acct.accountId,
      emailId: mails[k % 60] as string,
      endpointId: hooks[k < 60 ? 0 : 1] as string,
      maxAttempts: 5,
      status: "delivered",
      attemptCount: 1,
      createdAt: new Date(Date.now() - (106 - (k + 1)) * 1000),
    })),
  });
  await createMember(stack, acct.accountId, "pager@paging.example", PASSWORD, { cheapHash: true });
  ui = await openConsole(stack.apiUrl);
  page = ui.page;
  await ui.signIn("pager@paging.example", PASSWORD);
}, 120_000);
afterAll(async () => {
  await ui?.browser.close();
  await stack?.close();
});

const subjects = () => page.locator("tbody tr td:nth-child(2) button").allTextContents();

describe("console paging and filters", () => {
  it("Mail: the newest 50, then Older shows the other 10, Newest goes back", async () => {
    await page.getByRole("link", { name: "Mail" }).click();
    await page.getByRole("button", { name: "mail 60" }).waitFor(WAIT);
    const first = await subjects();
    expect(first).toHaveLength(50);
    expect(first[0]).toBe("mail 60");
    expect(first.at(-1)).toBe("mail 11");
    await page.getByRole("button", { name: "Older" }).click();
    await page.getByRole("button", { name: "mail 10", exact: true }).waitFor(WAIT);
    expect(await subjects()).toEqual(Array.from({ length: 10 }, (_, i) => `mail ${10 - i}`));
    expect(await page.getByRole("button", { name: "Older" }).count()).toBe(0);
    await ui.shot("mail-older");
    await page.getByRole("button", { name: "Newest" }).click();
    await page.getByRole("button", { name: "mail 60" }).waitFor(WAIT);
  });

  it("Mail: the sender and direction filters narrow the list", async () => {
    await page.getByLabel("Sender").fill("boss@");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.getByRole("button", { name: "mail 11" }).waitFor({ state: "detached", ...WAIT });
    expect(await subjects()).toEqual(["mail 60", "mail 50", "mail 40", "mail 30", "mail 20", "mail 10"]);
    await page.getByLabel("Sender").fill("");
    await page.getByLabel("Direction").selectOption("inbound");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.getByRole("button", { name: "mail 59" }).waitFor(WAIT);
    const inbound = await subjects();
    expect(inbound).toHaveLength(50);
    expect(inbound.some((s) => Number(s.split(" ")[1]) % 10 === 0)).toBe(false);
    await ui.shot("mail-filtered");
  });

  it("Deliveries: the newest 100, Older the other 5", async () => {
    await page.getByRole("link", { name: /Deliveries/ }).click();
    const ids = () => page.locator("tbody tr td:nth-child(2)").allTextContents();
    await page.getByText("dlv_paging105").waitFor(WAIT);
    const first = await ids();
    expect(first).toHaveLength(100);
    expect([first[0], first.at(-1)]).toEqual(["dlv_paging105", "dlv_paging006"]);
    await page.getByRole("button", { name: "Older" }).click();
    await page.getByText("dlv_paging001").waitFor(WAIT);
    expect(await ids()).toEqual(["dlv_paging005", "dlv_paging004", "dlv_paging003", "dlv_paging002", "dlv_paging001"]);
    await ui.shot("deliveries-older");
  });

  it("Shield: the block log shows 25, Older the other 5", async () => {
    await page.getByRole("link", { name: "Shield rules" }).click();
    const log = page.getByRole("table", { name: "Block log" });
    await log.getByText("spammer30@bad.example").waitFor(WAIT);
    expect(await log.locator("tbody tr").count()).toBe(25);
    await page.getByRole("button", { name: "Older" }).click();
    await log.getByText("spammer5@bad.example", { exact: true }).waitFor(WAIT);
    expect(await log.locator("tbody tr").count()).toBe(5);
    expect(await log.getByText("spammer30@bad.example").count()).toBe(0);
    await ui.shot("shield-block-log-older");
  });
});
