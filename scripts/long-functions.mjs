// No function over 60 lines in services/ and packages/ (issue 14, CONVENTIONS "Style"): a reader
// should be able to hold one function in view. Lists every function declaration, method,
// constructor, accessor, arrow function and function expression longer than MAX_LINES in the
// non-test .ts/.tsx sources, and fails on any that scripts/long-functions.allowlist does not name.
//
// How a function is measured: from the line of its first token (its name, `async`, or the `(` of
// an arrow, after any leading comment) to the line of its closing token, both counted. Each
// function is measured on its own span, and an outer function's span excludes nothing: a React
// component or a factory that returns an object of methods counts whole, inner functions included,
// because the reader still scrolls through all of it. An inner function that is itself too long is
// reported too, under its qualified name (`outer > inner`).
//
// The allowlist is a ratchet: an entry whose function is now within the limit, or no longer exists,
// fails the check as well, so the list only shrinks. Run: node scripts/long-functions.mjs
// (exits 1 and says why); scripts/long-functions.test.ts runs it in jest.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const MAX_LINES = 60;
const root = fileURLToPath(new URL("..", import.meta.url));
export const ALLOWLIST = "scripts/long-functions.allowlist";
const SCANNED = ["services", "packages"];
// Generated code (Prisma client, OpenAPI types), installs, builds and the spam corpus are not ours
// to shape; tests are exempt by the rule itself.
const SKIP_DIRS = new Set(["node_modules", "generated", "dist", "corpus", "test", "e2e"]);
const SOURCE = /\.tsx?$/;
const isTestFile = (name) => /\.test\.tsx?$/.test(name) || name.endsWith(".d.ts");

function* sources(dir) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return; // a scanned root that does not exist (fixtures)
  }
  for (const entry of entries) {
    if (SKIP_DIRS.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (SOURCE.test(entry) && !isTestFile(entry)) yield path;
  }
}

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node) ||
  ts.isArrowFunction(node) ||
  ts.isFunctionExpression(node);

const propertyName = (name, file) =>
  ts.isIdentifier(name) || ts.isPrivateIdentifier(name) ? name.text : name.getText(file);

/** What a reader would call the function: its own name, the name it is bound to, or what it is passed to. */
function nameOf(node, file) {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (node.name) return propertyName(node.name, file);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return ts.isIdentifier(parent.name) || ts.isPrivateIdentifier(parent.name) || ts.isStringLiteral(parent.name)
      ? parent.name.text
      : parent.name.getText(file);
  }
  if (ts.isExportAssignment(parent)) return "default";
  if (ts.isCallExpression(parent) || ts.isNewExpression(parent)) {
    // `prisma.$transaction(async (tx) => …)` → "$transaction callback"
    const callee = parent.expression;
    const short = ts.isPropertyAccessExpression(callee) ? callee.name.text : callee.getText(file);
    return `${short.length > 40 ? "call" : short} callback`;
  }
  return "anonymous";
}

/** Functions over `max` lines in one source text: `{ name, line, lines }`, names qualified by their enclosing functions and classes. */
export function longFunctionsIn(path, text, max = MAX_LINES) {
  const file = ts.createSourceFile(
    path,
    text,
    ts.ScriptTarget.Latest,
    true,
    path.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const found = [];
  const seen = new Map();
  const lineOf = (pos) => file.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node, scope) => {
    let inner = scope;
    if (isFunction(node) && node.body) {
      let name = [...scope, nameOf(node, file)].join(" > ");
      // Two anonymous callbacks of the same name in one scope: number the later ones.
      const count = (seen.get(name) ?? 0) + 1;
      seen.set(name, count);
      if (count > 1) name = `${name} #${count}`;
      const start = lineOf(node.getStart(file));
      const lines = lineOf(node.getEnd()) - start + 1;
      if (lines > max) found.push({ name, line: start, lines });
      inner = [...scope, name.split(" > ").at(-1)];
    } else if (ts.isClassLike(node)) {
      inner = [...scope, node.name?.text ?? "class"];
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(file, []);
  return found;
}

/** Every function over the limit under services/ and packages/ of `repo`, as `path: name` keys with their spans. */
export function longFunctions(repo = root, max = MAX_LINES) {
  const all = [];
  for (const top of SCANNED) {
    for (const path of sources(join(repo, top))) {
      const rel = relative(repo, path).split(sep).join("/");
      for (const f of longFunctionsIn(rel, readFileSync(path, "utf8"), max)) {
        all.push({ key: `${rel}: ${f.name}`, line: f.line, lines: f.lines });
      }
    }
  }
  return all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Allowlist entries: one `path: name` a line; `#` starts a comment (who owns it, why it stays). */
export function readAllowlist(text) {
  return text
    .split("\n")
    .map((line) => line.replace(/#.*$/, "").trim())
    .filter(Boolean);
}

/** What fails the check: offenders the allowlist does not name, and entries that no longer offend. */
export function checkLongFunctions(repo = root, max = MAX_LINES) {
  const found = longFunctions(repo, max);
  let allowText = "";
  try {
    allowText = readFileSync(join(repo, ALLOWLIST), "utf8");
  } catch {
    // no allowlist: every offender fails
  }
  const allowed = new Set(readAllowlist(allowText));
  const offending = new Set(found.map((f) => f.key));
  return {
    found,
    unlisted: found.filter((f) => !allowed.has(f.key)),
    stale: [...allowed].filter((key) => !offending.has(key)).sort(),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { found, unlisted, stale } = checkLongFunctions();
  if (process.argv.includes("--list")) {
    for (const f of found) console.log(`${f.lines}\t${f.key} (line ${f.line})`);
  }
  if (unlisted.length) {
    console.error(
      `Functions over ${MAX_LINES} lines (split them into named steps; ${ALLOWLIST} is only for code another change owns):\n` +
        unlisted.map((f) => `  ${f.key} — ${f.lines} lines from line ${f.line}`).join("\n"),
    );
  }
  if (stale.length) {
    console.error(
      `${ALLOWLIST} names functions that are now within ${MAX_LINES} lines or gone; delete these lines:\n` +
        stale.map((key) => `  ${key}`).join("\n"),
    );
  }
  if (unlisted.length || stale.length) process.exit(1);
  console.log(`long functions: ${found.length} over ${MAX_LINES} lines, all in ${ALLOWLIST}`);
}
