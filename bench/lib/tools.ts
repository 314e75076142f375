// Debian tools a bench needs (Postfix, psql): installed on first use through the project's own
// installer, under the machine-wide apt lock so that parallel installs do not collide.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { root } from "./procs.ts";

export function ensureDebianTool(binary: string, pkg: string): void {
  if (existsSync(binary)) return;
  console.log(`${binary} missing: installing Debian package ${pkg}`);
  // Both sudo themselves when not root, and wait for apt's locks (scripts/apt.sh).
  const script =
    pkg === "postfix"
      ? `bash ${root}/scripts/install-mail-tools.sh postfix`
      : `source ${root}/scripts/apt.sh && export DEBIAN_FRONTEND=noninteractive && apt_update -qq && apt_get install -y -qq --no-install-recommends ${pkg}`;
  execFileSync("flock", ["/tmp/mailroom-apt.lock", "bash", "-c", script], { stdio: "inherit" });
  if (!existsSync(binary)) throw new Error(`${pkg} did not install ${binary}`);
}
