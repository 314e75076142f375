import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { waitFor } from "@mailroom/testing";

/**
 * scripts/apt.sh: the setup scripts' apt-get waits for a lock another process holds instead of
 * failing at once (on a busy CI machine `scripts/test.sh` died on "Could not get lock"). Real
 * apt-get, on a private apt state (its own lists, cache, an empty source list and dpkg status), so
 * nothing of the machine's own apt state is read or locked. The lock is held the way apt holds it,
 * an fcntl lock, here by perl (perl-base is in every Debian).
 */
const root = path.resolve(import.meta.dirname, "..");
const HOLD = `use Fcntl; open(my $f, ">>", $ARGV[0]) or die "$!";
my $lock = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0); fcntl($f, F_SETLKW, $lock) or die "$!";
$| = 1; print "held\\n"; <STDIN>;`;

type Run = { child: ChildProcess; output: () => string; exit: Promise<number | null> };

function start(command: string, args: string[], input = false): Run {
  const child = spawn(command, args, { cwd: root, stdio: [input ? "pipe" : "ignore", "pipe", "pipe"] });
  let output = "";
  const collect = (d: Buffer) => {
    output += d.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exit = new Promise<number | null>((resolve) => child.once("close", resolve));
  return { child, output: () => output, exit };
}

/** Until `run` printed `text`; its exit (apt-get failing at once on the lock) fails at once. */
async function printed(run: Run, text: string, what: string): Promise<void> {
  await waitFor(
    async () => {
      if (run.output().includes(text)) return true;
      if (run.child.exitCode !== null) throw new Error(`exited ${run.child.exitCode} before ${what}:\n${run.output()}`);
      return false;
    },
    { what, timeoutMs: 60_000 },
  );
}

describe("apt-get in the setup scripts", () => {
  let dir: string;
  let holder: Run | undefined;
  const options = () =>
    [
      `Dir::State=${dir}/state`,
      `Dir::State::Lists=${dir}/state/lists`,
      `Dir::State::status=${dir}/dpkg/status`,
      `Dir::Cache=${dir}/cache`,
      `Dir::Etc::SourceList=${dir}/sources.list`,
      `Dir::Etc::SourceParts=${dir}/sources.list.d`,
    ].flatMap((o) => ["-o", o]);
  const viaHelper = (call: string) =>
    start("bash", ["-c", `source scripts/apt.sh && ${call} "$@"`, "apt-test", ...options()]);
  const hold = async (file: string) => {
    holder = start("perl", ["-e", HOLD, path.join(dir, file)], true);
    await printed(holder, "held", `the lock on ${file}`);
    return holder;
  };

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), "mailroom-apt-"));
    for (const d of ["state/lists/partial", "cache/archives/partial", "sources.list.d", "dpkg"]) {
      mkdirSync(path.join(dir, d), { recursive: true });
    }
    writeFileSync(path.join(dir, "sources.list"), "");
    writeFileSync(path.join(dir, "dpkg/status"), "");
  });
  afterEach(async () => {
    holder?.child.stdin?.end();
    await holder?.exit;
    holder = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it("install waits for the dpkg lock another process holds, then runs", async () => {
    const lock = await hold("dpkg/lock-frontend");
    const install = viaHelper("apt_get install -y");
    await printed(install, "Waiting for cache lock", "apt-get waiting for the dpkg lock");
    lock.child.stdin?.end();
    expect(await install.exit).toBe(0);
  });

  it("update waits for the package lists lock another process holds, then runs", async () => {
    const lock = await hold("state/lists/lock");
    const update = viaHelper("apt_update -qq");
    await printed(update, "waiting for the package lists lock", "apt_update waiting for the lists lock");
    lock.child.stdin?.end();
    expect(await update.exit).toBe(0);
  });

  it("update still fails at once on anything but the lock", async () => {
    writeFileSync(path.join(dir, "sources.list"), "this is not a source line\n");
    const update = viaHelper("apt_update -qq");
    expect(await update.exit).not.toBe(0);
    expect(update.output()).not.toMatch(/waiting/);
    expect(update.output()).toMatch(/list of sources could not be read/);
  });

  it("every apt-get of the scripts goes through apt.sh", () => {
    const direct = readdirSync(path.join(root, "scripts"))
      .filter((f) => f.endsWith(".sh") && f !== "apt.sh")
      .filter((f) => /^[^#]*\bapt-get\b/m.test(readFileSync(path.join(root, "scripts", f), "utf8")));
    expect(direct).toEqual([]);
  });
});
