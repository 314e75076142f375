// `npm run build`: the production build in dist/ — compiled JavaScript of every service, the packages
// they use and the admin CLI (tsc, type-checked; `.ts` imports rewritten to `.js`), each workspace's
// package.json pointing at the compiled files, the SQL migrations, and a package.json/package-lock.json
// from which `npm ci --omit=dev` installs only what runs. dist/ is an app root: scripts/run.sh and
// the Docker image start exactly these files (`node services/<name>/src/main.js`).
// Plain JavaScript, so it needs nothing but Node and the TypeScript compiler.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// `--out DIR` builds elsewhere (the build test); default dist/.
const outArg = process.argv.indexOf("--out");
const out = outArg > 0 && process.argv[outArg + 1] ? resolve(process.argv[outArg + 1]) : join(root, "dist");

/**
 * Workspaces that run in production; the rest (test harness, the in-process test stack, SDK, Prisma
 * CLI) stay out of dist/. The stack depends on the test harness, which brought testcontainers into
 * the runtime install.
 */
const excluded = new Set(["packages/testing", "packages/stack", "packages/client", "tools/prisma-cli"]);
const workspaces = ["packages", "services", "tools"]
  .flatMap((dir) => readdirSync(join(root, dir)).map((name) => `${dir}/${name}`))
  .filter((ws) => existsSync(join(root, ws, "package.json")) && !excluded.has(ws))
  .sort();

const consoleConfig = join(root, "services/api/console/vite.config.ts");
rmSync(out, { recursive: true, force: true });
const tsc = join(root, "node_modules/typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", out], {
  cwd: root,
  stdio: "inherit",
});

const toJs = (value) =>
  typeof value === "string"
    ? value.replace(/\.ts$/, ".js")
    : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJs(v)]));

for (const ws of workspaces) {
  const pkg = JSON.parse(readFileSync(join(root, ws, "package.json"), "utf8"));
  if (pkg.exports) pkg.exports = toJs(pkg.exports);
  // Bin scripts run TypeScript through tsx (a development tool); the image runs entry points directly.
  delete pkg.bin;
  mkdirSync(join(out, ws), { recursive: true });
  writeFileSync(join(out, ws, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
}

const rootPkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
rootPkg.workspaces = workspaces;
// The root's own dependencies are development tools (tsx, TypeScript, Prisma's CLI, jest…); what
// runs is declared by the workspaces. (The Dockerfile re-resolves package-lock.json for this file.)
delete rootPkg.dependencies;
delete rootPkg.devDependencies;
rootPkg.scripts = {
  start: "node packages/db/src/migrate-cli.js && node scripts/start-all.js",
  "db:migrate": "node packages/db/src/migrate-cli.js",
  admin: "node tools/admin/src/cli.js",
  ...Object.fromEntries(
    workspaces
      .filter((ws) => ws.startsWith("services/"))
      .map((ws) => [`start:${ws.slice(9)}`, `node ${ws}/src/main.js`]),
  ),
};
writeFileSync(join(out, "package.json"), `${JSON.stringify(rootPkg, null, 2)}\n`);
cpSync(join(root, "package-lock.json"), join(out, "package-lock.json"));
cpSync(join(root, "prisma/migrations"), join(out, "prisma/migrations"), { recursive: true });

// The console's web app (React, bundled by Vite into static files the API serves at /console),
// written straight beside the compiled API; the checkout's own copy (for `npm start`) is
// `npm run console:build`'s, which a build running at the same time must not empty.
const consoleOut = join(out, "services/api/console/dist");
execFileSync(
  process.execPath,
  [join(root, "node_modules/vite/bin/vite.js"), "build", "--config", consoleConfig, "--outDir", consoleOut],
  { cwd: root, stdio: "inherit" },
);

// Run in place from a checkout: @mailroom/* resolve to dist's compiled workspaces first (Node looks in
// dist/node_modules before the checkout's node_modules, which serves every third-party package).
// `npm ci` in an image built from dist/ replaces these links with its own, to the same folders.
for (const ws of workspaces) {
  const pkg = JSON.parse(readFileSync(join(out, ws, "package.json"), "utf8"));
  const link = join(out, "node_modules", pkg.name);
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(relative(dirname(link), join(out, ws)), link);
}
console.log(`build: ${relative(root, out) || "."}/ (${workspaces.length} workspaces)`);
