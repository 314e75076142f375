// Debian tools a bench needs (Postfix, psql): installed on first use through the project's own
// installer, under the machine-wide apt lock so that parallel installs do not collide.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { root } from "./procs.ts";

export function ensureDebianTool(binary: string, pkg: string): void {
  if (existsSync(binary)) return;
  console.log(`${binary} missing: installing Debian package ${pkg}`);
  const script =
    pkg === "postfix"
      ? `bash ${root}/scripts/install-mail-tools.sh postfix`
      : `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${pkg}`;
  const sudo = process.getuid?.() === 0 || pkg === "postfix" ? "" : "sudo "; // the installer sudoes itself
  execFileSync("flock", ["/tmp/mailroom-apt.lock", "sh", "-c", `${sudo}${script}`], { stdio: "inherit" });
  if (!existsSync(binary)) throw new Error(`${pkg} did not install ${binary}`);
}
