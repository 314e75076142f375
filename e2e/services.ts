import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("..", import.meta.url));

/** Every service the repository has: a folder under services/ with an entry point. */
export function repoServices(): string[] {
  return readdirSync(join(repoRoot, "services"))
    .filter((name) => existsSync(join(repoRoot, "services", name, "src/main.ts")))
    .sort();
}
