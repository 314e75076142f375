import { execFile } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, jest } from "@jest/globals";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { createTestEnv, type TestEnv } from "@mailroom/testing";

/**
 * The admin CLI as an operator runs it: a separate process (`node --import tsx src/cli.ts`) on a
 * test database; stdout, stderr and the exit code are what is checked.
 */
const root = path.resolve(import.meta.dirname, "../../..");
// Each test starts several Node processes one after another (about a second each when the machine
// is idle, several when CI's two cores are busy): a bound, not a speed requirement.
jest.setTimeout(300_000);
let env: TestEnv;
let prisma: PrismaClient;

beforeAll(async () => {
  env = await createTestEnv();
  prisma = createPrisma(env.databaseUrl, { max: 2 });
});
afterAll(async () => {
  await prisma?.$disconnect();
  await env?.cleanup();
});

type Run = { code: number; stdout: string; stderr: string };
function admin(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "tools/admin/src/cli.ts", ...args],
      { cwd: root, env: { ...process.env, DATABASE_URL: env.databaseUrl }, timeout: 120_000 },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== "number") return reject(err);
        resolve({ code: typeof err?.code === "number" ? err.code : 0, stdout, stderr });
      },
    );
  });
}

const json = async (...args: string[]) => {
  const r = await admin(...args, "--json");
  expect([args, r.code, r.stderr]).toEqual([args, 0, ""]);
  return JSON.parse(r.stdout);
};

describe("admin CLI (subprocess)", () => {
  it("every command has --help (exit 0, usage on stdout, nothing on stderr)", async () => {
    const commands = [
      [],
      ["accounts"],
      ["accounts", "create"],
      ["accounts", "set-plan"],
      ["accounts", "list"],
      ["accounts", "show"],
      ["keys"],
      ["keys", "create"],
      ["keys", "revoke"],
      ["keys", "list"],
      ["keys", "show"],
      ["domains"],
      ["domains", "verify"],
      ["domains", "list"],
      ["domains", "show"],
      ["members"],
      ["members", "create"],
      ["members", "reset-password"],
      ["members", "remove"],
      ["members", "list"],
    ];
    for (const c of commands) {
      const r = await admin(...c, "--help");
      expect([c, r.code, r.stderr]).toEqual([c, 0, ""]);
      expect(r.stdout).toContain(`Usage: admin${c.length ? ` ${c.join(" ")}` : ""}`);
      if (c.length === 2) expect(r.stdout).toContain("--json");
    }
  });

  it("members create prints the one-time link under --console-url (default: PUBLIC_API_URL); bad lines exit 2, refusals 1", async () => {
    const acc = await json("accounts", "create", "--name", "Members");
    const m = await json(
      "members",
      "create",
      "--account",
      acc.id,
      "--email",
      "Ops@CLI.example",
      "--console-url",
      "https://mail.example.com/",
    );
    expect(m).toMatchObject({ accountId: acc.id, email: "ops@cli.example" });
    expect(m.setPasswordUrl).toMatch(/^https:\/\/mail\.example\.com\/console\/set-password#token=[\w-]{43}$/);
    const missing = await admin("members", "create", "--account", acc.id);
    expect([missing.code, missing.stdout]).toEqual([2, ""]);
    expect(missing.stderr).toContain("--email");
    const again = await admin("members", "create", "--account", acc.id, "--email", "ops@cli.example");
    expect([again.code, again.stdout]).toEqual([1, ""]);
    expect(again.stderr).toContain("already a member");
    const list = await json("members", "list", "--account", acc.id);
    expect(list.data).toEqual([expect.objectContaining({ email: "ops@cli.example", passwordSet: false })]);
    expect(JSON.stringify(list)).not.toContain("token");
  });

  it("an unknown flag is an error: exit 2, message on stderr, nothing created", async () => {
    const before = await prisma.account.count();
    const r = await admin("accounts", "create", "--name", "typo", "--plna", "scale");
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("unknown option '--plna'");
    expect(await prisma.account.count()).toBe(before);
    for (const bad of [
      ["bogus"],
      ["accounts", "list", "extra"],
      ["accounts", "create", "--name", "x", "--plan", "gold"],
    ]) {
      const b = await admin(...bad);
      expect([bad, b.code, b.stdout]).toEqual([bad, 2, ""]);
      expect(b.stderr).toMatch(/^error: /);
    }
    const missing = await admin("keys", "show", "--key", "key_nope");
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([1, "", "error: key key_nope not found\n"]);
  });

  it("create, set-plan, list and show for accounts, keys and domains: JSON with --json, a table without", async () => {
    const acc = await json("accounts", "create", "--name", "Acme Corp");
    expect(acc).toMatchObject({ name: "Acme Corp", plan: "selfhosted" });
    expect(await json("accounts", "set-plan", "--account", acc.id, "--plan", "scale")).toEqual({
      id: acc.id,
      plan: "scale",
    });
    const key = await json("keys", "create", "--account", acc.id, "--scope", "full", "--name", "ci");
    expect(key.key).toMatch(/^svc_/);
    await prisma.domain.create({
      data: {
        id: "dom_clitest0000000001",
        accountId: acc.id,
        domain: "cli-test.example",
        dkimTokens: [],
        dnsRecords: [],
      },
    });
    expect(await json("domains", "verify", "--domain", "cli-test.example", "--force")).toMatchObject({
      status: "verified",
    });

    const accounts = await json("accounts", "list");
    expect(accounts.data).toContainEqual(
      expect.objectContaining({ id: acc.id, plan: "scale", domains: 1, activeKeys: 1 }),
    );
    expect(await json("accounts", "show", "--account", acc.id)).toMatchObject({
      id: acc.id,
      plan: "scale",
      ruleCap: 200,
      monthlyAllotment: 1_000_000,
      domains: 1,
      keys: 1,
    });
    const keys = await json("keys", "list", "--account", acc.id);
    expect(keys.data).toEqual([expect.objectContaining({ id: key.id, scope: "full", name: "ci", revokedAt: null })]);
    // Lists never show the key or its hash.
    expect(JSON.stringify(keys)).not.toContain(key.key);
    expect(await json("keys", "show", "--key", key.id)).toMatchObject({ id: key.id, prefix: key.prefix });
    expect((await json("domains", "list", "--account", acc.id)).data).toEqual([
      expect.objectContaining({ domain: "cli-test.example", status: "verified" }),
    ]);
    expect(await json("domains", "show", "--domain", "CLI-Test.example.")).toMatchObject({
      id: "dom_clitest0000000001",
    });

    // Without --json: a readable table with a header row, and key/value lines for one object.
    const table = await admin("accounts", "list");
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+NAME\s+PLAN\s+DOMAINS\s+ACTIVEKEYS\s+CREATEDAT$/);
    expect(lines.some((l) => l.startsWith(acc.id) && l.includes("Acme Corp") && l.includes("scale"))).toBe(true);
    const shown = await admin("accounts", "show", "--account", acc.id);
    expect(shown.stdout).toMatch(/^id\s+acc_/m);
    expect(shown.stdout).toMatch(/^plan\s+scale$/m);
  });
});
