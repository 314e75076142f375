// The npm registry reachable here carries only some platforms' binary packages (e.g. it has
// @biomejs/cli-linux-x64 but not @biomejs/cli-win32-x64), so `npm install` leaves the other
// platforms' optional dependencies out of package-lock.json — and `npm ci` then refuses the lock as
// out of sync. This adds an entry for each missing optional platform package, marked optional with
// its os/cpu/libc, so `npm ci` sees a complete lock and skips them on this platform as it would
// anyway. Run after any `npm install` that rewrites the lock: `node scripts/lock-optional-platforms.mjs`.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const pkgs = lock.packages;

const OS = ["win32", "darwin", "linux", "android", "freebsd", "openbsd", "netbsd", "sunos", "aix", "openharmony"];
const CPU = {
  x64: "x64",
  arm64: "arm64",
  ia32: "ia32",
  arm: "arm",
  ppc64: "ppc64",
  s390x: "s390x",
  loong64: "loong64",
  riscv64: "riscv64",
  wasm32: "wasm32",
  mips64el: "mips64el",
  ppc64le: "ppc64",
};

function platformOf(name) {
  const base = name.split("/").pop();
  const parts = base.split("-");
  const os = OS.find((o) => parts.includes(o) || (o === "win32" && parts.includes("windows")));
  const cpuKey =
    parts.find((p) => CPU[p]) ??
    (base.includes("x86_64") ? "x64" : undefined) ??
    (base.includes("aarch64") ? "arm64" : undefined);
  const libc =
    parts.includes("musl") || parts.includes("musleabihf")
      ? "musl"
      : parts.includes("gnu") || parts.includes("gnueabihf")
        ? "glibc"
        : undefined;
  return { os, cpu: cpuKey ? CPU[cpuKey] : undefined, libc };
}

let added = 0;
for (const [where, meta] of Object.entries(pkgs)) {
  for (const [dep, range] of Object.entries(meta.optionalDependencies ?? {})) {
    const nested = `${where ? `${where}/` : ""}node_modules/${dep}`;
    if (pkgs[nested] || pkgs[`node_modules/${dep}`]) continue;
    const { os, cpu, libc } = platformOf(dep);
    if (!os && !cpu) continue; // not a platform package: leave it to npm
    const version = String(range).replace(/^[\^~=]/, "");
    pkgs[`node_modules/${dep}`] = {
      version,
      optional: true,
      ...(os ? { os: [os] } : {}),
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(libc ? { libc: [libc] } : {}),
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lock-optional-platforms: added ${added} optional platform entries`);
