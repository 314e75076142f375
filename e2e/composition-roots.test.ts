import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { repoRoot, repoServices } from "./services.ts";

/**
 * Issue 14 item 3: each service is wired once, in services/<name>/src/service.ts, which its main.ts
 * and the in-process stack (@mailroom/stack) both call. main.ts only parses the env, calls it and
 * installs the shutdown handler; the stack reaches services only through their package roots.
 */
const read = (path: string) => readFileSync(join(repoRoot, path), "utf8");
const importsOf = (text: string) => [...text.matchAll(/^import [^;]*? from "([^"]+)";$/gm)].map((m) => m[1] ?? "");

describe.each(repoServices())("%s", (name) => {
  it("main.ts parses the env, calls its composition root and installs the shutdown handler, nothing else", () => {
    const main = read(`services/${name}/src/main.ts`);
    expect(importsOf(main).sort()).toEqual(["./env.ts", "./service.ts", "@mailroom/log", "@mailroom/runtime"]);
    expect(main).toMatch(/await start\w+Service\(env\)/);
    expect(main).toMatch(/installShutdown\(\w+\.logger, \w+\.steps, env\.SHUTDOWN_TIMEOUT_MS\)/);
  });

  it("its package root exports the env loader and the composition root", async () => {
    const root = await import(`@mailroom/${name}`);
    const starters = Object.keys(root).filter((k) => /^start\w+Service$/.test(k));
    expect(starters).toHaveLength(1);
    expect(Object.keys(root).some((k) => /^load\w+Env$/.test(k))).toBe(true);
  });
});

it("the in-process stack imports services by their package roots only", () => {
  const stack = importsOf(read("packages/stack/src/stack.ts"));
  expect(stack.filter((s) => s.includes("services/") || /^@mailroom\/[\w-]+\//.test(s))).toEqual([]);
});
