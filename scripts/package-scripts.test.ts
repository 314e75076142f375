import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "@jest/globals";

/** Every file an npm script of the root package.json runs exists (`npm run setup` once pointed at none). */
describe("root npm scripts", () => {
  const root = path.resolve(import.meta.dirname, "..");
  const scripts = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts as Record<string, string>;

  it("name only files that exist", () => {
    const missing = Object.entries(scripts).flatMap(([name, command]) =>
      [...command.matchAll(/(?:^|\s)((?:\.\/)?(?:scripts|packages|services|tools|bench|node_modules)\/[\w./-]+)/g)]
        .map((m) => m[1] as string)
        .filter((file) => !existsSync(path.join(root, file)))
        .map((file) => `${name}: ${file}`),
    );
    expect(missing).toEqual([]);
  });

  it("the check finds a missing file", () => {
    expect(existsSync(path.join(root, "scripts/setup.sh"))).toBe(false);
  });
});
