import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMember, type Fixture, type Stack, seedEverything, startStack, type TestAccount } from "@mailroom/stack";
import type { Page } from "playwright-core";
import { type ConsoleBrowser, openConsole, WAIT } from "./console-browser.ts";

/**
 * The console's Shield rules page in chromium (issue 17): the condition builder, an inline error,
 * reorder, disable, delete, a dry run of a pasted message and the block log. The fixture seeds one
 * rule ("r", priority 1) and one block record of it. Screenshots: test-artifacts/console/.
 */
const PASSWORD = "a long enough password";
const RAW = [
  "From: Spammer <spam@bad.example>",
  "To: info@shield.example.com",
  "Subject: cheap pills",
  "",
  "buy now",
].join("\r\n");

let stack: Stack;
let acct: TestAccount;
let f: Fixture;
let ui: ConsoleBrowser;
let page: Page;

beforeAll(async () => {
  stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
  acct = await stack.account({ plan: "free" });
  f = await seedEverything(stack, acct, "shield.example.com");
  await createMember(stack, acct.accountId, "owner@shield.example.com", PASSWORD, { cheapHash: true });
  ui = await openConsole(stack.apiUrl);
  page = ui.page;
  await ui.signIn("owner@shield.example.com", PASSWORD);
}, 120_000);
afterAll(async () => {
  await ui?.browser.close();
  await stack?.close();
});

const rulesOf = () =>
  stack.prisma.shieldRule.findMany({ where: { accountId: acct.accountId }, orderBy: { priority: "asc" } });
const ruleId = async (name: string) => (await rulesOf()).find((r) => r.name === name)?.id ?? "";
const row = (name: string) =>
  page
    .getByRole("table", { name: "Rules in evaluation order" })
    .locator("tr", { has: page.getByRole("cell", { name, exact: true }) });

describe("console shield rules in chromium", () => {
  it("lists the rules and the seeded block record in the block log", async () => {
    await page.getByRole("link", { name: "Shield rules" }).click();
    await row("r").waitFor(WAIT);
    const blocks = page.getByRole("table", { name: "Block log" });
    await blocks.locator("tr", { hasText: "a@sender.example" }).waitFor(WAIT);
    expect(await blocks.textContent()).toContain("blocked");
  });

  it("the builder offers only the operators valid for the chosen field", async () => {
    await page.getByLabel("Field 1").selectOption("has_attachment");
    const ops = await page.getByLabel("Operator 1").locator("option").allTextContents();
    expect(ops).toEqual(["is_true", "is_false"]);
    expect(await page.getByLabel("Value 1").count()).toBe(0);
    await page.getByLabel("Field 1").selectOption("from_domain");
    expect(await page.getByLabel("Operator 1").locator("option").allTextContents()).toEqual([
      "contains",
      "not_contains",
      "equals",
      "starts_with",
      "ends_with",
    ]);
  });

  it("shows the API's error under the condition's value, then creates the rule", async () => {
    await page.getByLabel("Name").fill("no bad senders");
    await page.getByLabel("Action").selectOption("block");
    await page.getByLabel("Operator 1").selectOption("equals");
    await page.getByRole("button", { name: "Create rule" }).click();
    const err = page.locator("#cond-value-0-error");
    await err.waitFor(WAIT);
    expect(await err.textContent()).toBe("must not be empty");
    await page.getByLabel("Value 1").fill("bad.example");
    await page.getByRole("button", { name: "Create rule" }).click();
    await row("no bad senders").waitFor(WAIT);
    const rules = await rulesOf();
    expect(rules.map((r) => [r.name, r.priority, r.enabled, r.action])).toEqual([
      ["r", 1, true, "block"],
      ["no bad senders", 2, true, "block"],
    ]);
    expect(rules[1]?.conditions).toEqual([{ field: "from_domain", operator: "equals", value: "bad.example" }]);
    await ui.shot("shield-created");
  });

  it("moves the new rule up (evaluation order is stored)", async () => {
    await page.getByRole("button", { name: "Move no bad senders up" }).click();
    await page.getByRole("button", { name: "Move no bad senders down" }).waitFor(WAIT);
    expect((await rulesOf()).map((r) => r.name)).toEqual(["no bad senders", "r"]);
  });

  it("dry-runs a pasted message and shows the deciding rule", async () => {
    await page.getByLabel("Raw message").fill(RAW);
    await page.getByRole("button", { name: "Run dry run" }).click();
    const verdict = page.getByTestId("verdict");
    await verdict.waitFor(WAIT);
    expect(await verdict.textContent()).toMatch(/^block by rule “no bad senders”/);
    await ui.shot("shield-dry-run");
  });

  it("disables the rule (row updated); the dry run then skips it", async () => {
    await page.getByRole("button", { name: "Disable no bad senders" }).click();
    await page.getByRole("button", { name: "Enable no bad senders" }).waitFor(WAIT);
    const rule = (await rulesOf()).find((r) => r.name === "no bad senders");
    expect(rule?.enabled).toBe(false);
    await page.getByRole("button", { name: "Run dry run" }).click();
    await page.getByTestId("verdict").filter({ hasText: "no bad senders: skipped (disabled)" }).waitFor(WAIT);
  });

  it("deletes a rule; the other moves up to priority 1", async () => {
    await page.getByRole("button", { name: "Delete r", exact: true }).click();
    await row("r")
      .filter({ hasNotText: "no bad senders" })
      .waitFor({ state: "detached", ...WAIT });
    expect((await rulesOf()).map((r) => [r.name, r.priority])).toEqual([["no bad senders", 1]]);
    // The block record outlives its rule.
    expect(await stack.prisma.blockRecord.count({ where: { id: f.blockId as string } })).toBe(1);
    await ui.shot("shield-after-delete");
  });

  it("creates a route rule to a webhook and an email endpoint, scoped to one domain", async () => {
    // At most one webhook-kind and one email destination (spec §8): the form has one select of each.
    const second = await acct.api("POST", "/api/v1/endpoints", {
      name: "ops mail",
      type: "email",
      url: "mailto:ops@elsewhere.example",
    });
    expect(second.status).toBe(201);
    await page.reload();
    const form = page.getByRole("form", { name: "Create a shield rule" });
    await form.getByLabel("Name").fill("to the hook");
    await form.getByLabel("Action").selectOption("route");
    await form.getByLabel("Applies to").selectOption({ label: "domain shield.example.com" });
    // The seeded endpoint is named after its URL's host.
    await form.getByLabel("Route to").selectOption({ label: "127.0.0.1 (webhook)" });
    await form.getByLabel("Also email to").selectOption({ label: "ops mail (email)" });
    await form.getByLabel("Field 1").selectOption("has_attachment");
    await form.getByLabel("Operator 1").selectOption("is_true");
    await ui.shot("shield-route-two");
    await form.getByRole("button", { name: "Create rule" }).click();
    await row("to the hook").waitFor(WAIT);
    const rule = (await rulesOf()).find((r) => r.name === "to the hook");
    expect(rule).toMatchObject({ action: "route", priority: 2, domainId: f.domainId, addressId: null });
    expect([...(rule?.endpointIds ?? [])].sort()).toEqual([f.endpointId, second.body.id].sort());
    expect(rule?.conditions).toEqual([{ field: "has_attachment", operator: "is_true" }]);
    expect(await row("to the hook").textContent()).toContain("only shield.example.com");
  });

  it("edits a rule: name, a condition and its destinations (action and scope stay); errors under the field", async () => {
    await page.getByRole("button", { name: "Edit to the hook" }).click();
    const form = page.getByRole("form", { name: "Edit rule to the hook" });
    await form.getByLabel("Name").fill("hooked");
    await form.getByLabel("Field 1").selectOption("subject");
    await form.getByLabel("Operator 1").selectOption("contains");
    await form.getByLabel("Value 1").fill("invoice");
    await form.getByLabel("Also email to").selectOption({ label: "no email" });
    // An error from the API lands under its field: an empty value is refused.
    await form.getByLabel("Value 1").fill("");
    await form.getByRole("button", { name: "Save rule" }).click();
    await form.locator("#edit-" + (await ruleId("to the hook")) + "-cond-value-0-error").waitFor(WAIT);
    await ui.shot("shield-edit-error");
    await form.getByLabel("Value 1").fill("invoice");
    await form.getByRole("button", { name: "Save rule" }).click();
    await row("hooked").waitFor(WAIT);
    const rule = (await rulesOf()).find((r) => r.name === "hooked");
    expect(rule).toMatchObject({ action: "route", domainId: f.domainId, endpointIds: [f.endpointId] });
    expect(rule?.conditions).toEqual([{ field: "subject", operator: "contains", value: "invoice" }]);
    await ui.shot("shield-after-edit");
  });

  it("another account's rule cannot be edited through the console (404, nothing changes)", async () => {
    const other = await stack.account();
    const theirs = await other.api("POST", "/api/v1/shield-rules", {
      name: "theirs",
      action: "block",
      conditions: [{ field: "subject", operator: "contains", value: "x" }],
    });
    expect(theirs.status).toBe(201);
    const status = await page.evaluate(
      async ([id]) => {
        const w = globalThis as unknown as { fetch: typeof fetch };
        const s = (await (await w.fetch("/console/api/session")).json()) as { csrfToken: string };
        const r = await w.fetch(`/console/api/shield-rules/${id}`, {
          method: "PATCH",
          headers: { "content-type": "application/json", "x-csrf-token": s.csrfToken },
          body: JSON.stringify({ name: "mine now" }),
        });
        return r.status;
      },
      [theirs.body.id as string],
    );
    expect(status).toBe(404);
    expect((await stack.prisma.shieldRule.findUnique({ where: { id: theirs.body.id } }))?.name).toBe("theirs");
  });

  it("usable at phone width", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await row("hooked").waitFor(WAIT);
    const overflow = await page.evaluate(() => {
      const w = globalThis as unknown as { document: { documentElement: { scrollWidth: number } }; innerWidth: number };
      return w.document.documentElement.scrollWidth - w.innerWidth;
    });
    await ui.shot("shield-phone");
    expect(overflow).toBeLessThanOrEqual(0);
  });
});
