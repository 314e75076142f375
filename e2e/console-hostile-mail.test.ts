import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId } from "@mailroom/db";
import { createMember, type Fixture, type Stack, seedEverything, startStack, type TestAccount } from "@mailroom/stack";
import { seedEmail, waitFor } from "@mailroom/testing";
import type { Frame, Page, Request, Route } from "playwright-core";
import { type ConsoleBrowser, openConsole, WAIT } from "./console-browser.ts";

/**
 * Hostile mail in the console, in chromium: HTML that tries to phone home (read receipts) through
 * every element that makes a browser fetch, mail CSS that must apply, remote images only on the
 * reader's choice, bidi tricks in file names and subjects, a 3,000-character subject, and a late
 * list answer for a filter the reader already left. The tracker is a real HTTP server that counts
 * TCP connections, not only requests (a preconnect opens a socket and sends nothing).
 */
const PASSWORD = "a long enough password";

type Tracker = { url: string; connections: number; paths: string[]; close(): Promise<void> };

async function startTracker(): Promise<Tracker> {
  const t = { connections: 0, paths: [] as string[] };
  const server = http.createServer((req, res) => {
    t.paths.push(req.url ?? "");
    // A 1×1 GIF, so an image that is allowed to load really loads.
    res.writeHead(200, { "content-type": "image/gif" });
    res.end(Buffer.from("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==", "base64"));
  });
  server.on("connection", () => t.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(t, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** Every way HTML can make a browser fetch or connect; `T` is the tracker's URL. */
const phoningHome = (T: string) => `<!doctype html><html><head>
<meta http-equiv="refresh" content="0;url=${T}/refresh">
<link rel="preload" href="${T}/preload" as="image">
<link rel="prefetch" href="${T}/prefetch">
<link rel="dns-prefetch" href="${T}/dns-prefetch">
<link rel="preconnect" href="${T}/preconnect">
<link rel="stylesheet" href="${T}/stylesheet">
<link rel="icon" href="${T}/icon">
<base href="${T}/base/">
<style>@import url(${T}/import); .bg{background:url(${T}/style-url)} @font-face{font-family:x;src:url(${T}/font)} .f{font-family:x}</style>
<script src="${T}/script"></script>
</head><body background="${T}/body-background">
<iframe src="${T}/iframe"></iframe>
<frameset><frame src="${T}/frame"></frameset>
<object data="${T}/object"></object>
<embed src="${T}/embed">
<img src="${T}/img">
<img srcset="${T}/srcset 1x, ${T}/srcset2 2x">
<img src="relative.png">
<picture><source srcset="${T}/picture-source"><img src="data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="></picture>
<video poster="${T}/poster" src="${T}/video" autoplay></video>
<audio src="${T}/audio" autoplay></audio>
<video><source src="${T}/video-source"><track src="${T}/track"></video>
<table background="${T}/table-background"><tr><td background="${T}/td-background">cell</td></tr></table>
<div class="bg f" style="background-image:url(${T}/inline-style)">styled</div>
<input type="image" src="${T}/input-image">
<svg><image href="${T}/svg-image" width="1" height="1"/><use href="${T}/svg-use#x"/></svg>
<form action="${T}/form"><button formaction="${T}/formaction">go</button></form>
<a href="${T}/link" ping="${T}/ping">a link</a>
<img src="x" onerror="fetch('${T}/onerror')">
</body></html>`;

/** Paths that are images: the only ones allowed once the reader chooses to load remote images. */
const IMAGE_PATHS = [
  "/img",
  "/srcset",
  "/srcset2",
  "/table-background",
  "/td-background",
  "/inline-style",
  "/style-url",
  "/input-image",
];

const STYLED = (T: string) => `<html><head><style>
.brand { color: rgb(1, 2, 3); font-weight: 700 }
</style></head><body>
<p class="brand" id="sheet">styled by a style element</p>
<p id="inline" style="color: rgb(4, 5, 6); margin-left: 17px">styled inline</p>
<img id="remote" src="${T}/pixel.gif" width="1" height="1">
</body></html>`;

const RLO = "\u202E";
const LONG_SUBJECT = "A".repeat(3000);

let stack: Stack;
let acct: TestAccount;
let f: Fixture;
let tracker: Tracker;
let ui: ConsoleBrowser;
let page: Page;
const mail: Record<string, string> = {};

/** The browser globals used inside page.evaluate (this file compiles without the DOM library). */
type Win = {
  getComputedStyle(el: unknown): { color: string; marginLeft: string; fontWeight: string };
  document: {
    documentElement: { scrollWidth: number };
    getElementById(id: string): ({ complete: boolean; naturalWidth: number } & object) | null;
    readyState: string;
  };
  innerWidth: number;
  requestAnimationFrame(cb: () => void): void;
  __settled?: Record<string, number>;
};

async function seedHtml(subject: string, htmlBody: string): Promise<string> {
  const { id } = await seedEmail(stack.prisma, acct.accountId, { domainId: f.domainId, subject });
  await stack.prisma.email.update({ where: { id }, data: { htmlBody } });
  return id;
}

beforeAll(async () => {
  tracker = await startTracker();
  stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
  acct = await stack.account({ plan: "free" });
  f = await seedEverything(stack, acct, "hostile.example.com");
  mail.phoning = await seedHtml("phoning home", phoningHome(tracker.url));
  mail.styled = await seedHtml("styled newsletter", STYLED(tracker.url));
  mail.spoof = (
    await seedEmail(stack.prisma, acct.accountId, {
      domainId: f.domainId,
      subject: `Your invoice ${RLO}gnp.cod`,
      attachments: [
        { filename: `invoice${RLO}fdp.exe`, contentType: "application/pdf", content: Buffer.from("MZ...") },
      ],
    })
  ).id;
  mail.long = (await seedEmail(stack.prisma, acct.accountId, { domainId: f.domainId, subject: LONG_SUBJECT })).id;
  await createMember(stack, acct.accountId, "reader@hostile.example.com", PASSWORD, { cheapHash: true });
  ui = await openConsole(stack.apiUrl);
  page = ui.page;
  // Counts, per URL, the console's fetches whose answer the page has read (or that failed or were
  // aborted): the condition the list-race test waits for.
  await page.addInitScript(() => {
    const w = globalThis as unknown as Win & { fetch: typeof fetch };
    const settled: Record<string, number> = {};
    w.__settled = settled;
    const original = w.fetch.bind(w);
    const mark = (url: string) => {
      settled[url] = (settled[url] ?? 0) + 1;
    };
    w.fetch = async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      const url = new URL(String(input), (globalThis as unknown as { location: { href: string } }).location.href).href;
      try {
        const res = await original(input, init);
        const text = res.text.bind(res);
        (res as { text: () => Promise<string> }).text = () => text().finally(() => mark(url));
        return res;
      } catch (err) {
        mark(url);
        throw err;
      }
    };
  });
  await ui.signIn("reader@hostile.example.com", PASSWORD);
}, 120_000);
afterAll(async () => {
  await ui?.browser.close();
  await tracker?.close();
  await stack?.close();
});

/** Opens the message from a freshly loaded Mail page (so no earlier message view is still open). */
async function openMessage(id: string): Promise<void> {
  await page.goto(`${stack.apiUrl}/console/mail`);
  await page.locator(`tr[data-email="${id}"] button`).click();
  await page.locator("#message-subject").waitFor(WAIT);
}

/** The mail frame once its document and everything it was allowed to load have finished. */
async function mailFrame(remoteImages = false): Promise<Frame> {
  const el = page.locator(remoteImages ? `iframe.mail-html[src$="?images=remote"]` : "iframe.mail-html");
  await el.waitFor(WAIT);
  const frame = await (await el.elementHandle())?.contentFrame();
  if (!frame) throw new Error("no mail frame");
  await frame.waitForLoadState("load", WAIT);
  await frame.waitForFunction(() => (globalThis as unknown as Win).document.readyState === "complete", undefined, WAIT);
  return frame;
}

describe("hostile mail in the console (chromium)", () => {
  it("HTML that phones home: not one connection reaches the sender, with remote images off", async () => {
    await openMessage(mail.phoning as string);
    const frame = await mailFrame();
    expect(await frame.locator("body").textContent()).toContain("a link");
    await ui.shot("hostile-phoning-home");
    expect(tracker.paths).toEqual([]);
    expect(tracker.connections).toBe(0);
  });

  it("with remote images chosen, only images load: no frame, object, link, media, font, script or form", async () => {
    await page.getByRole("button", { name: "Load remote images" }).click();
    await mailFrame(true);
    await waitFor(async () => tracker.paths.includes("/img"), { what: "the remote image" });
    const unexpected = tracker.paths.filter((p) => !IMAGE_PATHS.includes(p));
    expect(unexpected).toEqual([]);
  });

  it("the frame's own policy: a sandbox with no scripts, styles allowed, nothing else remote", async () => {
    const res = await fetch(`${stack.apiUrl}/console/api/emails/${mail.phoning}/html`, {
      headers: { cookie: await sessionCookie() },
    });
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toMatch(/(^|; )sandbox(;|$)/);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("style-src 'unsafe-inline'");
    expect(csp).not.toMatch(/img-src[^;]*http/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const body = await res.text();
    for (const gone of ["<iframe", "<object", "<embed", "<link", "<meta http-equiv", "<script", "onerror", "<base"]) {
      expect(body).not.toContain(gone);
    }
  });

  it("mail styles apply: a <style> rule and an inline style (computed in the frame)", async () => {
    await openMessage(mail.styled as string);
    const frame = await mailFrame();
    const styles = await frame.evaluate(() => {
      const w = globalThis as unknown as Win;
      const sheet = w.getComputedStyle(w.document.getElementById("sheet"));
      const inline = w.getComputedStyle(w.document.getElementById("inline"));
      return { sheet: sheet.color, weight: sheet.fontWeight, inline: inline.color, margin: inline.marginLeft };
    });
    expect(styles).toEqual({ sheet: "rgb(1, 2, 3)", weight: "700", inline: "rgb(4, 5, 6)", margin: "17px" });
    await ui.shot("hostile-styled");
  });

  it("remote images load only after the reader chooses, for this message", async () => {
    const frame = await mailFrame();
    // The image element has given up (no source left, or the policy refused it): nothing was asked.
    await frame.waitForFunction(
      () => (globalThis as unknown as Win).document.getElementById("remote")?.complete === true,
      undefined,
      WAIT,
    );
    expect(tracker.paths).not.toContain("/pixel.gif");
    await page.getByRole("button", { name: "Load remote images" }).click();
    const shown = await mailFrame(true);
    await waitFor(async () => tracker.paths.includes("/pixel.gif"), { what: "the remote image" });
    await shown.waitForFunction(
      () => ((globalThis as unknown as Win).document.getElementById("remote")?.naturalWidth ?? 0) > 0,
      undefined,
      WAIT,
    );
    // Another message starts with remote images blocked again.
    await openMessage(mail.phoning as string);
    await page.getByRole("button", { name: "Load remote images" }).waitFor(WAIT);
  });

  it("a reversed file name shows its controls and its real extension; the text beside it stays in place", async () => {
    await openMessage(mail.spoof as string);
    const item = page.getByRole("list", { name: "Attachments" }).locator("li").first();
    await item.waitFor(WAIT);
    expect(await item.textContent()).toContain("invoice[U+202E]fdp.exe");
    expect(await item.getByTestId("extension").textContent()).toBe(".exe");
    // Laid out left to right: the name, then its extension label, then the type and size.
    const name = await item.locator("a").boundingBox();
    const ext = await item.getByTestId("extension").boundingBox();
    const meta = await item.locator(".muted").boundingBox();
    if (!name || !ext || !meta) throw new Error("attachment row not laid out");
    expect(ext.x).toBeGreaterThanOrEqual(name.x + name.width - 1);
    expect(meta.x).toBeGreaterThanOrEqual(ext.x + ext.width - 1);
    // Every mail-supplied string is isolated.
    expect(await page.locator("#message-subject bdi").count()).toBe(1);
    await ui.shot("hostile-bidi");
  });

  it("a 3,000-character subject does not widen the list or the message", async () => {
    const overflow = () =>
      page.evaluate(() => {
        const w = globalThis as unknown as Win;
        return w.document.documentElement.scrollWidth - w.innerWidth;
      });
    await page.goto(`${stack.apiUrl}/console/mail`);
    await page.locator(`tr[data-email="${mail.long}"]`).waitFor(WAIT);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await ui.shot("hostile-long-subject-list");
    await page.locator(`tr[data-email="${mail.long}"] button`).click();
    await page.locator("#message-subject").waitFor(WAIT);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await ui.shot("hostile-long-subject-message");
  });
});

async function sessionCookie(): Promise<string> {
  const c = (await page.context().cookies()).find((x) => x.name === "mailroom_console");
  return `mailroom_console=${c?.value ?? ""}`;
}

describe("a late list answer (chromium)", () => {
  it("an answer for the filter the reader left never replaces the list for the filter now selected", async () => {
    // A second delivery beside the seeded dead one: "all" lists two, "retrying" none.
    await stack.prisma.delivery.create({
      data: {
        id: newId("delivery"),
        accountId: acct.accountId,
        emailId: mail.styled as string,
        endpointId: f.endpointId as string,
        maxAttempts: 5,
        status: "delivered",
        attemptCount: 1,
      },
    });
    await page.getByRole("link", { name: /Deliveries/ }).click();
    await page.locator("tr[data-status]").nth(1).waitFor(WAIT);

    // The answer for "retrying" is held until the list shows "all"; then it is let go.
    let held: { route: Route; request: Request } | undefined;
    let heldArrived: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => {
      heldArrived = resolve;
    });
    await page.route(/\/console\/api\/deliveries\?.*status=retrying/, async (route, request) => {
      if (held) return route.continue();
      held = { route, request };
      heldArrived();
    });
    const status = page.getByLabel("Status");
    await status.selectOption("retrying");
    await arrived;
    await status.selectOption("");
    await page.locator("tr[data-status]").nth(1).waitFor(WAIT);

    const url = held?.request.url() ?? "";
    await held?.route.continue().catch(() => undefined); // already aborted by the page: nothing to continue
    // The page has read (or dropped) that answer; then let it render anything it would render.
    await page.waitForFunction((u) => ((globalThis as unknown as Win).__settled?.[u] ?? 0) > 0, url, WAIT);
    await page.evaluate(() => {
      const w = globalThis as unknown as Win;
      return new Promise<void>((resolve) => w.requestAnimationFrame(() => w.requestAnimationFrame(resolve)));
    });
    expect(await page.locator("tr[data-status]").count()).toBe(2);
    expect(await page.getByText("No deliveries yet").count()).toBe(0);
    await page.unroute(/\/console\/api\/deliveries\?.*status=retrying/);
  });
});
