import { execFile } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, "../../..");

export type PackedInstall = {
  /** A folder outside the checkout whose node_modules holds the package as npm would install it. */
  dir: string;
  /** Files in the tarball, relative to the package root. */
  files: string[];
  /** Runs `node <args>` in `dir` (no access to the checkout's node_modules). */
  node(args: string[], env?: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }>;
  cleanup(): Promise<void>;
};

/**
 * `npm pack` of a workspace package (its prepack build included), unpacked into node_modules of a
 * fresh folder outside the checkout: what a user gets from the registry. The package's own
 * dependencies are linked from the checkout's node_modules (same versions, no registry needed).
 */
export async function installPacked(pkgDir: string, dependencies: readonly string[]): Promise<PackedInstall> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), "mailroom-packed-")));
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir], {
    cwd: path.resolve(repoRoot, pkgDir),
    maxBuffer: 16 * 1024 * 1024,
  });
  const info = JSON.parse(stdout.slice(stdout.indexOf("["))) as {
    name: string;
    filename: string;
    files: { path: string }[];
  }[];
  const packed = info[0];
  if (!packed) throw new Error(`npm pack ${pkgDir} reported nothing`);
  const target = path.join(dir, "node_modules", packed.name);
  await mkdir(target, { recursive: true });
  await run("tar", ["-xzf", path.join(dir, path.basename(packed.filename)), "-C", target, "--strip-components=1"]);
  for (const dep of dependencies) {
    const link = path.join(dir, "node_modules", dep);
    await mkdir(path.dirname(link), { recursive: true });
    await symlink(await realpath(path.join(repoRoot, "node_modules", dep)), link);
  }
  return {
    dir,
    files: packed.files.map((f) => f.path).sort(),
    node: (args, env) => run(process.execPath, args, { cwd: dir, env: { PATH: process.env.PATH, ...env } }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
