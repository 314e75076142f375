// No import cycles in services/ and packages/ (issue 14): a cycle makes the order modules initialise
// in depend on which one is imported first (an export read before it is set is `undefined`), and
// it ties modules that should change apart. Type-only imports count too: they are still a
// dependency a reader has to untangle. Relative imports and workspace package imports
// (`@mailroom/core`, resolved through the package's `exports` to its source file) are followed;
// test files are left out. Run: node scripts/import-cycles.mjs (exits 1 and lists each cycle);
// a jest test runs it.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { importsOf } from "./undeclared-imports.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const TOPS = ["services", "packages"];
const SKIP_DIRS = new Set(["node_modules", "generated", "dist", "test", "corpus"]);
const SOURCE = /\.(?:ts|tsx|mts|js|mjs)$/;
const isTest = (name) => /\.test\.[cm]?[jt]sx?$/.test(name);

function* sources(dir) {
  for (const entry of readdirSync(dir)) {
    if (SKIP_DIRS.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (SOURCE.test(entry) && !isTest(entry) && !entry.endsWith(".d.ts")) yield path;
  }
}

/** Workspace package name → its directory and `exports` map (string targets only). */
function workspaces(repo) {
  const out = new Map();
  for (const top of TOPS) {
    const base = join(repo, top);
    if (!existsSync(base)) continue;
    for (const ws of readdirSync(base)) {
      const pkgPath = join(base, ws, "package.json");
      if (!existsSync(pkgPath)) continue;
      const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
      const exports = typeof pkg.exports === "string" ? { ".": pkg.exports } : (pkg.exports ?? {});
      out.set(pkg.name, { dir: join(base, ws), exports });
    }
  }
  return out;
}

/** The file an import names, or null when it leaves the repository's sources (npm, node:, a build). */
function resolveImport(from, specifier, packages) {
  let target;
  if (specifier.startsWith(".")) target = resolve(dirname(from), specifier);
  else {
    const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0];
    const pkg = packages.get(name);
    const entry = pkg?.exports[`.${specifier.slice(name.length)}`];
    if (typeof entry !== "string") return null;
    target = resolve(pkg.dir, entry);
  }
  for (const candidate of [target, target.replace(/\.js$/, ".ts"), `${target}.ts`, join(target, "index.ts")]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

/** file → the repository files it imports. */
export function importGraph(repo = root) {
  const packages = workspaces(repo);
  const graph = new Map();
  for (const top of TOPS) {
    const base = join(repo, top);
    if (!existsSync(base)) continue;
    for (const file of sources(base)) {
      const deps = importsOf(readFileSync(file, "utf8"))
        .map((s) => resolveImport(file, s, packages))
        .filter((t) => t !== null);
      graph.set(file, [...new Set(deps)]);
    }
  }
  return graph;
}

/** Strongly connected components of more than one file (or a file importing itself), Tarjan's way. */
function cyclesOf(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Each cycle as its files (relative to `repo`, sorted) joined by " <-> "; sorted. */
export function importCycles(repo = root) {
  return cyclesOf(importGraph(repo))
    .map((c) =>
      c
        .map((f) => relative(repo, f))
        .sort()
        .join(" <-> "),
    )
    .sort();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const cycles = importCycles();
  if (cycles.length) {
    console.error(`Import cycles (services/ and packages/, tests aside):\n${cycles.join("\n")}`);
    process.exit(1);
  }
}
