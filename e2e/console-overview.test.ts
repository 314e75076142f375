import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMember, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type ConsoleBrowser, openConsole, WAIT } from "./console-browser.ts";

/**
 * The overview's charts and the endpoints' health in Chromium, over mail sent over SMTP, blocked by
 * a shield rule or delivered by the dispatcher to a real receiver (one endpoint answers 503 until
 * its deliveries are dead). Every number on the page is compared with what Postgres holds.
 * Screenshots at 1280 and 390 px: test-artifacts/console/overview-*.png, endpoint-health-*.png.
 */
const PASSWORD = "a long enough password";
const DOMAIN = "overview-charts.example.com";
let stack: Stack;
let acct: TestAccount;
let receiver: Receiver;
let ui: ConsoleBrowser;
const ep = { ok: "", bad: "" };

async function endpointFor(localPart: string, name: string, path: string, maxAttempts: number, domainId: string) {
  const e = await acct.api("POST", "/api/v1/endpoints", { name, url: `${receiver.url}/${path}`, maxAttempts });
  expect(e.status).toBe(201);
  expect((await acct.api("POST", "/api/v1/addresses", { domainId, localPart, endpointId: e.body.id })).status).toBe(
    201,
  );
  return e.body.id as string;
}

const count = (where: object) => stack.prisma.delivery.count({ where: { accountId: acct.accountId, ...where } });

beforeAll(async () => {
  receiver = await startReceiver();
  receiver.respond((req) =>
    req.path.startsWith("/broken")
      ? { status: 503, body: "upstream unavailable: maintenance until 12:00" }
      : { status: 200, body: "ok" },
  );
  stack = await startStack({ backoffUnitMs: 20 });
  acct = await stack.account();
  const dom = await acct.api("POST", "/api/v1/domains", { domain: DOMAIN });
  await stack.admin("domains", "verify", "--domain", DOMAIN, "--force");
  ep.ok = await endpointFor("orders", "orders-hook", "orders", 1, dom.body.id);
  ep.bad = await endpointFor("alerts", "broken-hook", "broken", 2, dom.body.id);
  const rule = await acct.api("POST", "/api/v1/shield-rules", {
    name: "no lottery",
    action: "block",
    conditions: [{ field: "subject", operator: "contains", value: "lottery" }],
  });
  expect(rule.status).toBe(201);
  const smtp = nodemailer.createTransport({ host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true });
  const mails = [
    ["orders", "order 1"],
    ["orders", "order 2"],
    ["orders", "order 3"],
    ["orders", "order 4"],
    ["alerts", "disk full"],
    ["alerts", "cpu hot"],
    ["orders", "you won the lottery"],
  ];
  for (const [to, subject] of mails)
    await smtp.sendMail({ from: "a@sender.example", to: `${to}@${DOMAIN}`, subject, text: "hello\n" });
  smtp.close();
  await waitFor(
    async () => ((await count({ status: "delivered" })) === 4 && (await count({ status: "dead" })) === 2) || null,
    {
      what: "4 delivered and 2 dead deliveries",
      timeoutMs: WAIT.timeout,
    },
  );
  await waitFor(
    async () => (await stack.prisma.blockRecord.count({ where: { accountId: acct.accountId } })) === 1 || null,
    {
      what: "the block record",
      timeoutMs: WAIT.timeout,
    },
  );
  // One message as the rule engine stores it past its processing budget (only how it is shown matters here).
  const one = await stack.prisma.email.findFirstOrThrow({ where: { accountId: acct.accountId, subject: "order 4" } });
  await stack.prisma.email.update({ where: { id: one.id }, data: { virusVerdict: "PROCESSING_FAILED" } });
  await createMember(stack, acct.accountId, "ops@overview-charts.example.com", PASSWORD, { cheapHash: true });
  ui = await openConsole(stack.apiUrl);
}, 240_000);

afterAll(async () => {
  await ui?.browser.close();
  await receiver?.close();
  await stack?.close();
});

/** What the page must show, straight from Postgres. */
async function expected() {
  const id = acct.accountId;
  const [mail] = await stack.prisma.$queryRaw<{ stored: bigint; failed: bigint }[]>`
    SELECT count(*) FILTER (WHERE "virusVerdict" <> 'PROCESSING_FAILED') AS stored,
           count(*) FILTER (WHERE "virusVerdict" = 'PROCESSING_FAILED') AS failed
      FROM emails WHERE "accountId" = ${id} AND direction = 'inbound'`;
  const [lat] = await stack.prisma.$queryRaw<{ p50: number; p95: number; n: bigint }[]>`
    SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY a."durationMs") AS p50,
           percentile_disc(0.95) WITHIN GROUP (ORDER BY a."durationMs") AS p95, count(*) AS n
      FROM delivery_attempts a JOIN deliveries d ON d.id = a."deliveryId" WHERE d."accountId" = ${id}`;
  return {
    "mail-stored": String(mail?.stored),
    "mail-failed": String(mail?.failed),
    "mail-blocked": String(await stack.prisma.blockRecord.count({ where: { accountId: id } })),
    "dlv-succeeded": String(await count({ status: "delivered" })),
    "dlv-dead": String(await count({ status: "dead" })),
    "dlv-retrying": String(await count({ status: "retrying" })),
    "dlv-pending": String(await count({ status: "pending" })),
    "latency-p50": `${lat?.p50} ms`,
    "latency-p95": `${lat?.p95} ms`,
    "latency-attempts": String(lat?.n),
  };
}

/** The document's width in the page (the test's own lib has no DOM types). */
const pageWidth = () =>
  (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
    .scrollWidth;

async function shown(ids: string[]) {
  const out: Record<string, string> = {};
  for (const id of ids) out[id] = ((await ui.page.getByTestId(id).textContent(WAIT)) ?? "").trim();
  return out;
}

describe("the overview's charts", () => {
  it("show the last 24 hours and the last 30 days as Postgres counts them", async () => {
    await ui.signIn("ops@overview-charts.example.com", PASSWORD);
    const page = ui.page;
    const want = await expected();
    expect(want).toMatchObject({ "mail-stored": "5", "mail-failed": "1", "mail-blocked": "1", "dlv-dead": "2" });
    for (const chart of ["chart-mail", "chart-deliveries", "chart-latency"])
      await page.getByTestId(chart).locator("canvas").waitFor(WAIT);
    expect(await shown(Object.keys(want))).toEqual(want);
    // Hovering the current hour's bar names its parts.
    const over = page.getByTestId("chart-mail").locator(".u-over");
    const box = await over.boundingBox();
    if (box) await page.mouse.move(box.x + box.width - 3, box.y + box.height / 2);
    expect(await page.getByTestId("chart-mail").locator(".chart-tip").textContent(WAIT)).toMatch(
      /^\d+ \w+ \d\d:\d\dStored: \d+Blocked: \d+Processing failed: \d+$/,
    );
    await ui.shot("overview-1280");

    await page.getByRole("button", { name: "Last 30 days" }).click();
    await page.getByRole("button", { name: "Last 30 days", pressed: true }).waitFor(WAIT);
    await page.getByTestId("chart-mail").locator("canvas").waitFor(WAIT);
    expect(await shown(Object.keys(want))).toEqual(want);
    // 30 daily bars: today's is named by its UTC date and shows what the API counts for it.
    const box30 = await page.getByTestId("chart-mail").locator(".u-over").boundingBox();
    if (box30) await page.mouse.move(box30.x + box30.width - 2, box30.y + box30.height / 2);
    const today = new Date().toLocaleString("en-GB", {
      day: "numeric",
      month: "short",
      year: "numeric",
      timeZone: "UTC",
    });
    const last = (await acct.api("GET", "/api/v1/stats?window=30d")).body.buckets.at(-1).mail;
    expect(await page.getByTestId("chart-mail").locator(".chart-tip").textContent(WAIT)).toBe(
      `${today} UTCStored: ${last.stored}Blocked: ${last.blocked}Processing failed: ${last.processingFailed}`,
    );
    await ui.shot("overview-30d-1280");

    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("button", { name: "Last 24 hours" }).click();
    await page.getByTestId("chart-latency").locator("canvas").waitFor(WAIT);
    // Nothing wider than the phone's screen.
    expect(await page.evaluate(pageWidth)).toBeLessThanOrEqual(390);
    await ui.shot("overview-390");
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});

describe("endpoint health", () => {
  it("the failing endpoint: failing since its first failure, 0 %, its failures with the response; the healthy one 100 %", async () => {
    const page = ui.page;
    await page.getByRole("link", { name: "Endpoints" }).click();
    const bad = page.getByRole("article", { name: "Endpoint broken-hook" });
    const good = page.getByRole("article", { name: "Endpoint orders-hook" });
    await bad.getByTestId("failing-since").waitFor(WAIT);
    const attempts = await stack.prisma.deliveryAttempt.findMany({
      where: { delivery: { endpointId: ep.bad } },
      orderBy: { startedAt: "asc" },
    });
    expect(attempts).toHaveLength(4);
    const first = attempts[0]?.startedAt.toISOString() ?? "";
    expect(await bad.getByTestId("failing-since").textContent()).toMatch(/^Failing since (just now|\d+ \w+ ago)/);
    expect(await bad.getByTestId("failing-since").locator("time").getAttribute("datetime")).toBe(first);
    expect((await bad.getByTestId("success-rate").textContent())?.trim()).toBe("0%");
    expect((await bad.getByTestId("backlog").textContent())?.trim()).toBe("0");
    const failures = bad.getByTestId("endpoint-failures");
    expect(await failures.locator("li").count()).toBe(4);
    expect(await failures.locator("li").first().textContent()).toMatch(
      /503HTTP 503attempt 2 · \d+ msupstream unavailable: maintenance until 12:00/,
    );
    const durations = attempts.map((a) => a.durationMs).sort((a, b) => a - b);
    expect((await bad.getByTestId("health-p95").textContent())?.trim()).toBe(`${durations[3]} ms`);

    await good.getByTestId("success-rate").filter({ hasText: "100%" }).waitFor(WAIT);
    expect(await good.getByTestId("failing-since").count()).toBe(0);
    await bad.getByTestId("chart-endpoint").locator("canvas").waitFor(WAIT);
    await ui.shot("endpoint-health-1280");

    await page.setViewportSize({ width: 390, height: 844 });
    await bad.getByTestId("chart-endpoint").locator("canvas").waitFor(WAIT);
    expect(await page.evaluate(pageWidth)).toBeLessThanOrEqual(390);
    await ui.shot("endpoint-health-390");
    expect(ui.foreign).toEqual([]);
  });
});
