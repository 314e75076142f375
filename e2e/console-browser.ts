import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { jest } from "@jest/globals";
import { type Browser, chromium, type Page } from "playwright-core";

/**
 * Debian's chromium driven by playwright-core (Playwright's own browser downloads cannot be fetched
 * here) against an API that serves the built console bundle. Screenshots go to
 * test-artifacts/console/ (gitignored) to be looked at.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const BUNDLE = join(import.meta.dirname, "../services/api/console/dist/index.html");
const SHOTS = join(import.meta.dirname, "../test-artifacts/console");
/**
 * The deadline of every wait and every browser action (goto, fill, click…: Playwright's own default
 * is 30 s): each waits for its condition, so the deadline only matters when the condition never
 * comes. On a 2-core machine at load average 40 a sign-in took 17 s and a page load with the SSE
 * stream 5-10 s, so 30 s (and jest's 60 s for a test of several such steps) was within reach of
 * load alone.
 */
export const WAIT = { timeout: 90_000 };
// A file that opens the console runs tests of several browser steps each.
jest.setTimeout(300_000);

export type ConsoleBrowser = {
  browser: Browser;
  page: Page;
  /** Requests the page made to any other origin than the API's (must stay empty). */
  foreign: string[];
  shot(name: string): Promise<unknown>;
  signIn(email: string, password: string): Promise<void>;
};

export async function openConsole(apiUrl: string): Promise<ConsoleBrowser> {
  if (!existsSync(BUNDLE))
    throw new Error("console bundle missing: run `npm run console:build` (scripts/test.sh does)");
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} missing: run scripts/install-chromium.sh`);
  mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(WAIT.timeout);
  const foreign: string[] = [];
  page.on("request", (r) => {
    if (!r.url().startsWith(apiUrl) && !r.url().startsWith("data:")) foreign.push(r.url());
  });
  return {
    browser,
    page,
    foreign,
    shot: (name) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true }),
    async signIn(email, password) {
      await page.goto(`${apiUrl}/console/`);
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(password);
      // The sign-in's own answer: anything but 201 fails here, naming it, instead of a wait for a
      // page that will never come.
      const [answer] = await Promise.all([
        page.waitForResponse(
          (r) => r.url() === `${apiUrl}/console/api/session` && r.request().method() === "POST",
          WAIT,
        ),
        page.getByRole("button", { name: "Sign in" }).click(),
      ]);
      if (answer.status() !== 201) throw new Error(`sign-in answered ${answer.status()}: ${await answer.text()}`);
      await page.getByRole("button", { name: "Sign out" }).waitFor(WAIT);
    },
  };
}
