import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
// @ts-expect-error: plain .mjs script, also run on its own by scripts/test.sh
import { importCycles } from "./import-cycles.mjs";

const write = (path: string, text: string) => {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
};

/** A repository of the given files; every `packages/<x>/package.json` below is a workspace. */
function repo(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "mailroom-cycles-"));
  for (const [path, text] of Object.entries(files)) write(join(dir, path), text);
  return dir;
}

const pkg = (name: string, exports: Record<string, string>) => JSON.stringify({ name, exports });

describe("import cycles", () => {
  it("none in this repository", () => {
    expect(importCycles()).toEqual([]);
  });

  it("reports a cycle through relative imports (type-only ones too), not a chain or a diamond", () => {
    const dir = repo({
      "services/s/package.json": pkg("@x/s", { ".": "./src/index.ts" }),
      "services/s/src/a.ts": 'import { b } from "./b.ts";',
      "services/s/src/b.ts": 'import type { A } from "./a.ts";\nimport { c } from "./c.ts";',
      "services/s/src/c.ts": 'import { readFile } from "node:fs";\nimport { z } from "zod";',
      "services/s/src/d.ts": 'import { b } from "./b.ts";\nimport { c } from "./c.ts";',
      "services/s/src/self.ts": 'export { x } from "./self.ts";',
    });
    expect(importCycles(dir)).toEqual(["services/s/src/a.ts <-> services/s/src/b.ts", "services/s/src/self.ts"]);
  });

  it("follows workspace packages to their source through `exports`; leaves tests out", () => {
    const dir = repo({
      "packages/p/package.json": pkg("@x/p", { ".": "./src/index.ts", "./sub": "./src/sub.ts" }),
      "packages/p/src/index.ts": 'export * from "./sub.ts";',
      "packages/p/src/sub.ts": 'import { q } from "@x/q";',
      "packages/q/package.json": pkg("@x/q", { ".": "./src/index.ts" }),
      "packages/q/src/index.ts": 'import { p } from "@x/p/sub";',
      "packages/q/src/index.test.ts": 'import { q } from "./index.ts";\nimport { p } from "@x/p";',
      "packages/q/test/helper.ts": 'import { q } from "../src/index.ts";',
    });
    expect(importCycles(dir)).toEqual(["packages/p/src/sub.ts <-> packages/q/src/index.ts"]);
  });
});
