// Every workspace declares what it imports (issue 14 item 10): a bare import of a package that is
// not in the workspace's own package.json works today only because npm hoisted it, and breaks the
// day the package that did declare it drops it, or in a production install of the workspace alone.
// Test files may also use what the root package.json declares (jest, nodemailer, …): they run from
// the root. Run: node scripts/undeclared-imports.mjs (exits 1 and lists them); a jest test runs it.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const SOURCE = /\.(?:ts|tsx|mts|cts|js|mjs|cjs)$/;
const SKIP_DIRS = new Set(["node_modules", "generated", "dist", "corpus"]);
const BUILTINS = new Set(builtinModules);
// import … from "x" / export … from "x" / import "x" / import("x") / require("x")
const SPECIFIERS = [
  /\b(?:import|export)\s[^'"]*?\sfrom\s*["']([^"']+)["']/g,
  /^\s*import\s*["']([^"']+)["']/gm,
  /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
  /\brequire\s*\(\s*["']([^"']+)["']\s*\)/g,
];

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`; relative, absolute, builtin → null. */
export function packageOf(specifier) {
  if (/^[./]/.test(specifier) || specifier.startsWith("node:") || specifier.startsWith("#")) return null;
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  return BUILTINS.has(name) ? null : name;
}

export function importsOf(text) {
  // Comments may quote import lines (examples, explanations): not imports.
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  const found = new Set();
  for (const re of SPECIFIERS) for (const m of code.matchAll(re)) found.add(m[1]);
  return [...found];
}

function declared(pkgJsonPath) {
  const pkg = JSON.parse(readFileSync(pkgJsonPath, "utf8"));
  const names = new Set([pkg.name]);
  for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
    for (const n of Object.keys(pkg[field] ?? {})) names.add(n);
  }
  return names;
}

function* files(dir) {
  for (const entry of readdirSync(dir)) {
    if (SKIP_DIRS.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (SOURCE.test(entry) && !entry.endsWith(".d.ts")) yield path;
  }
}

const isTest = (path) => /\.test\.[cm]?[jt]sx?$/.test(path) || /[\\/](?:test|e2e)[\\/]/.test(path);

/** The undeclared imports of every workspace under `repo`: `file: package` lines, sorted. */
export function undeclaredImports(repo = root) {
  const rootDeclared = declared(join(repo, "package.json"));
  const workspaces = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).workspaces ?? [];
  const problems = [];
  for (const pattern of workspaces) {
    const base = join(repo, pattern.replace(/\/\*$/, ""));
    for (const ws of readdirSync(base)) {
      const dir = join(base, ws);
      let own;
      try {
        own = declared(join(dir, "package.json"));
      } catch {
        continue; // not a workspace
      }
      for (const file of files(dir)) {
        for (const spec of importsOf(readFileSync(file, "utf8"))) {
          const name = packageOf(spec);
          if (!name || own.has(name) || own.has(`@types/${name}`)) continue;
          if (isTest(file) && rootDeclared.has(name)) continue;
          problems.push(`${relative(repo, file)}: ${name}`);
        }
      }
    }
  }
  return problems.sort();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const problems = undeclaredImports();
  if (problems.length) {
    console.error(`Imports of packages the workspace does not declare in its package.json:\n${problems.join("\n")}`);
    process.exit(1);
  }
}
