import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
// @ts-expect-error: plain .mjs script, also run on its own by scripts/test.sh
import { importsOf, undeclaredImports } from "./undeclared-imports.mjs";

const write = (path: string, text: string) => {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
};

/** A repository of one workspace that imports what `source` imports. */
function repo(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "mailroom-imports-"));
  write(join(dir, "package.json"), JSON.stringify({ workspaces: ["packages/*"], devDependencies: { jest: "1" } }));
  write(
    join(dir, "packages/a/package.json"),
    JSON.stringify({ name: "@x/a", dependencies: { zod: "4" }, devDependencies: { "@types/pg": "8" } }),
  );
  for (const [path, text] of Object.entries(files)) write(join(dir, "packages/a", path), text);
  return dir;
}

describe("undeclared imports", () => {
  it("none in this repository", () => {
    expect(undeclaredImports()).toEqual([]);
  });

  it("reports a package the workspace does not declare, and only that", () => {
    const dir = repo({
      "src/index.ts": [
        'import { z } from "zod";',
        'import { parse } from "zod/mini";',
        'import type { Pool } from "pg";', // @types/pg declared: a type-only use is fine
        'import { readFile } from "node:fs";',
        'import { join } from "path";',
        'import { self } from "@x/a/sub";',
        'import { local } from "./local.ts";',
        'export { thing } from "@scope/undeclared/deep";',
        'const lazy = await import("lodash");',
        'const req = require("left-pad");',
        '// import nope from "commented-out";',
        'spawn(node, ["--import", "tsx"]);',
      ].join("\n"),
      "src/index.test.ts": 'import { it } from "jest";\nimport x from "not-in-root";',
    });
    expect(undeclaredImports(dir)).toEqual([
      "packages/a/src/index.test.ts: not-in-root",
      "packages/a/src/index.ts: @scope/undeclared",
      "packages/a/src/index.ts: left-pad",
      "packages/a/src/index.ts: lodash",
    ]);
  });

  it("reads side-effect imports and multi-line import lists", () => {
    expect(importsOf('import "reflect-metadata";\nimport {\n  a,\n  b,\n} from "multi";')).toEqual(
      expect.arrayContaining(["reflect-metadata", "multi"]),
    );
  });
});
