import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
// @ts-expect-error: plain .mjs script, also run on its own by scripts/test.sh
import { checkLongFunctions, longFunctionsIn } from "./long-functions.mjs";

const write = (path: string, text: string) => {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
};

/** `n` statement lines: a body that makes its function `n + 2` lines long. */
const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join("\n");

/** A repository with the given files (paths relative to its root). */
function repo(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "mailroom-long-fns-"));
  for (const [path, text] of Object.entries(files)) write(join(dir, path), text);
  return dir;
}

type Found = { key: string; line: number; lines: number };

describe("long functions", () => {
  it("none in this repository outside scripts/long-functions.allowlist, and no stale entry", () => {
    const { unlisted, stale } = checkLongFunctions();
    expect(unlisted.map((f: Found) => f.key)).toEqual([]);
    expect(stale).toEqual([]);
  });

  it("measures each kind of function from its first token to its closing line, inner functions included", () => {
    const text = [
      "/** a doc comment is not counted */",
      `export function long() {\n${body(59)}\n}`, // 61 lines
      `export function exact() {\n${body(58)}\n}`, // 60 lines: allowed
      `const arrow = async () => {\n${body(59)}\n};`,
      `export class Store {\n  get(): void {\n${body(59)}\n  }\n}`,
      `export function factory() {\n  return {\n    put: function () {\n${body(30)}\n    },\n    del() {\n${body(30)}\n    },\n  };\n}`,
      `export function outer() {\n  run(async () => {\n${body(61)}\n  });\n}`,
    ].join("\n");
    const found = longFunctionsIn("src/a.ts", text, 60);
    expect(found.map((f: { name: string; lines: number }) => [f.name, f.lines])).toEqual([
      ["long", 61],
      ["arrow", 61],
      ["Store > get", 61],
      ["factory", 68], // counts whole although neither inner method is long
      ["outer", 65],
      ["outer > run callback", 63],
    ]);
    expect(found[0].line).toBe(2);
  });

  it("fails on an offender the allowlist does not name and on an entry that no longer offends; skips tests and generated code", () => {
    const long = (name: string) => `export function ${name}() {\n${body(70)}\n}\n`;
    const dir = repo({
      "services/a/src/handler.ts": long("handle") + long("listed"),
      "services/a/src/handler.test.ts": long("inTest"),
      "services/a/test/flow.ts": long("inTestFolder"),
      "packages/db/src/generated/client.ts": long("generated"),
      "packages/b/src/view.tsx": `export function View() {\n  return (\n    <div>\n${body(60)}\n    </div>\n  );\n}\n`,
      "scripts/long-functions.allowlist": [
        "# owner: another change",
        "services/a/src/handler.ts: listed  # kept until that change lands",
        "packages/b/src/gone.ts: removed",
      ].join("\n"),
    });
    const { found, unlisted, stale } = checkLongFunctions(dir, 60);
    expect(found.map((f: Found) => f.key)).toEqual([
      "packages/b/src/view.tsx: View",
      "services/a/src/handler.ts: handle",
      "services/a/src/handler.ts: listed",
    ]);
    expect(unlisted.map((f: Found) => [f.key, f.line, f.lines])).toEqual([
      ["packages/b/src/view.tsx: View", 1, 66],
      ["services/a/src/handler.ts: handle", 1, 72],
    ]);
    expect(stale).toEqual(["packages/b/src/gone.ts: removed"]);
  });
});
