// Issue 16 item 8: the production build (scripts/build.mjs, what the Docker image and scripts/run.sh
// start) runs without TypeScript tooling: compiled migrations CLI, the API and the rule engine (whose
// MIME parser runs in worker threads loaded from the compiled files) start from it and do their work.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { createTestEnv, sparePort, type TestEnv, waitFor } from "@mailroom/testing";
import { repoRoot, repoServices } from "./services.ts";

let out: string;
let env: TestEnv;
const children: ChildProcess[] = [];

/** A compiled entry point run by plain node (no tsx), with its output collected. */
function runCompiled(file: string, extraEnv: Record<string, string>) {
  const child = spawn(process.execPath, [file], {
    cwd: out,
    env: {
      PATH: process.env.PATH ?? "",
      NODE_ENV: "production",
      DATABASE_URL: env.databaseUrl,
      REDIS_URL: env.redisUrl,
      REDIS_PREFIX: env.redisPrefix,
      HEALTH_PORT: "0",
      LOG_LEVEL: "info",
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const output = { text: "" };
  child.stdout?.on("data", (d: Buffer) => {
    output.text += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    output.text += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.once("close", r));
  return { child, output, exited };
}

beforeAll(async () => {
  env = await createTestEnv();
  out = mkdtempSync(join(tmpdir(), "mailroom-build-"));
  execFileSync(process.execPath, [join(repoRoot, "scripts/build.mjs"), "--out", out], { stdio: "pipe" });
  // Third-party packages come from the checkout's node_modules, as the image's `npm ci` provides them;
  // @mailroom/* are the build's own links to its compiled workspaces.
  for (const name of readdirSync(join(repoRoot, "node_modules"))) {
    const link = join(out, "node_modules", name);
    if (name === "@mailroom" || name.startsWith(".") || existsSync(link)) continue;
    symlinkSync(join(repoRoot, "node_modules", name), link);
  }
}, 300_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(out, { recursive: true, force: true });
  await env.cleanup();
});

describe("the compiled build", () => {
  test("holds every service's entry point as JavaScript, and no TypeScript", () => {
    for (const s of repoServices()) expect(existsSync(join(out, "services", s, "src/main.js"))).toBe(true);
    const ts = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() && e.name !== "node_modules"
          ? ts(join(dir, e.name))
          : e.name.endsWith(".ts")
            ? [join(dir, e.name)]
            : [],
      );
    expect(ts(out)).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(out, "packages/db/package.json"), "utf8"));
    expect(pkg.exports).toEqual({ ".": "./src/index.js" });
  });

  test("the migrations CLI runs from it", async () => {
    const run = runCompiled("packages/db/src/migrate-cli.js", {});
    expect(await run.exited).toBe(0);
    expect(run.output.text).toMatch(/"msg":"migrations applied"/);
  }, 180_000);

  test("the API starts from it and answers", async () => {
    const port = await sparePort();
    const api = runCompiled("services/api/src/main.js", {
      API_PORT: String(port),
      API_HOST: "127.0.0.1",
      // NODE_ENV=production refuses the development default.
      CURSOR_SECRET: "compiled-build-cursor-secret",
    });
    await waitFor(
      async () => {
        if (api.child.exitCode !== null) throw new Error(`the compiled API exited: ${api.output.text}`);
        return /api listening/.test(api.output.text);
      },
      { what: "the compiled API to listen", timeoutMs: 120_000, intervalMs: 100 },
    );
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/emails`)).status).toBe(401);
    // The console's bundle is part of the build: index.html and the script it names.
    const page = await fetch(`http://127.0.0.1:${port}/console/`);
    expect(page.status).toBe(200);
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(await page.text())?.[1];
    expect(script).toBeDefined();
    expect((await fetch(`http://127.0.0.1:${port}${script}`)).status).toBe(200);
    api.child.kill("SIGTERM");
    expect(await api.exited).toBe(0);
  }, 180_000);

  test("the rule engine's MIME parser runs its worker threads from the compiled files", async () => {
    const script = join(out, "parse-check.mjs");
    writeFileSync(
      script,
      [
        'const { createParser } = await import("./services/rule-engine/src/parse.js");',
        "const parser = createParser({ threads: 1, timeoutMs: 60000 });",
        'const raw = Buffer.from("From: a@b.example\\r\\nSubject: compiled\\r\\n\\r\\nhello\\r\\n");',
        'const result = await parser.parse(raw, "x.example");',
        "console.log(JSON.stringify({ ok: result.ok, subject: result.email?.subject }));",
        "await parser.close();",
      ].join("\n"),
    );
    const run = runCompiled(script, {});
    expect(await run.exited).toBe(0);
    expect(JSON.parse(run.output.text.trim())).toEqual({ ok: true, subject: "compiled" });
  }, 180_000);

  test("the console's mail HTML sanitizer runs its worker thread from the compiled files", async () => {
    const script = join(out, "sanitize-check.mjs");
    writeFileSync(
      script,
      [
        'const { createMailSanitizer } = await import("./services/api/src/console/mail-html.js");',
        "const sanitizer = createMailSanitizer();",
        'const html = \'<p style="color:red">hi</p><iframe src="http://x.example/"></iframe><img src="http://x.example/i">\';',
        "const result = await sanitizer.sanitize(html, { remoteImages: false });",
        "console.log(JSON.stringify(result));",
        "await sanitizer.close();",
      ].join("\n"),
    );
    const run = runCompiled(script, {});
    expect(await run.exited).toBe(0);
    expect(JSON.parse(run.output.text.trim())).toEqual({ html: '<p style="color:red">hi</p><img>', blockedImages: 1 });
  }, 180_000);
});
