import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

/**
 * Debian's chromium driven by playwright-core (Playwright's own browser downloads cannot be fetched
 * here) against an API that serves the built console bundle. Screenshots go to
 * test-artifacts/console/ (gitignored) to be looked at.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const BUNDLE = join(import.meta.dirname, "../services/api/console/dist/index.html");
const SHOTS = join(import.meta.dirname, "../test-artifacts/console");
// Generous: the machine is shared and loaded; every wait is for a condition, never a duration.
export const WAIT = { timeout: 30_000 };

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
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("button", { name: "Sign out" }).waitFor(WAIT);
    },
  };
}
