import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { createTestEnv, type TestEnv } from "@mailroom/testing";
import { runCommand } from "./commands.ts";

describe("admin CLI commands", () => {
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

  const ok = async (...argv: string[]) => {
    const r = await runCommand(prisma, argv);
    if (!r.ok) throw new Error(r.error);
    return r.value;
  };

  it("creates an account on the selfhosted plan by default, or on free or scale", async () => {
    expect(await ok("accounts", "create", "--name", "Acme")).toMatchObject({ name: "Acme", plan: "selfhosted" });
    expect(await ok("accounts", "create", "--name", "Sold", "--plan", "free")).toMatchObject({ plan: "free" });
    const scale = await ok("accounts", "create", "--name", "Big", "--plan", "scale");
    expect(scale.plan).toBe("scale");
    expect(String(scale.id)).toMatch(/^acc_/);
    expect(await ok("accounts", "set-plan", "--account", String(scale.id), "--plan", "free")).toEqual({
      id: scale.id,
      plan: "free",
    });
  });

  it("keeps a new account's mail 30 days unless told otherwise, and changes or lifts the retention", async () => {
    const acc = await ok("accounts", "create", "--name", "Kept");
    expect(acc.retentionDays).toBe(30);
    const week = await ok("accounts", "create", "--name", "Week", "--retention-days", "7");
    expect((await prisma.account.findUniqueOrThrow({ where: { id: String(week.id) } })).retentionDays).toBe(7);
    expect(await ok("accounts", "set-retention", "--account", String(acc.id), "--days", "forever")).toEqual({
      id: acc.id,
      retentionDays: null,
    });
    expect(await ok("accounts", "show", "--account", String(acc.id))).toMatchObject({ retentionDays: null });
    await ok("accounts", "set-retention", "--account", String(acc.id), "--days", "365");
    expect((await prisma.account.findUniqueOrThrow({ where: { id: String(acc.id) } })).retentionDays).toBe(365);
  });

  it("gives new accounts the installation's DEFAULT_RETENTION_DAYS; --retention-days still wins; a bad value is refused", async () => {
    const before = process.env.DEFAULT_RETENTION_DAYS;
    try {
      process.env.DEFAULT_RETENTION_DAYS = "90";
      expect((await ok("accounts", "create", "--name", "Ninety")).retentionDays).toBe(90);
      expect((await ok("accounts", "create", "--name", "Seven", "--retention-days", "7")).retentionDays).toBe(7);
      process.env.DEFAULT_RETENTION_DAYS = "forever";
      const kept = await ok("accounts", "create", "--name", "Forever");
      expect((await prisma.account.findUniqueOrThrow({ where: { id: String(kept.id) } })).retentionDays).toBeNull();
      process.env.DEFAULT_RETENTION_DAYS = "0";
      const r = await runCommand(prisma, ["accounts", "create", "--name", "Bad"]);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toMatch(/DEFAULT_RETENTION_DAYS[\s\S]*from 1 to 3650/);
    } finally {
      if (before === undefined) delete process.env.DEFAULT_RETENTION_DAYS;
      else process.env.DEFAULT_RETENTION_DAYS = before;
    }
  });

  it("prints a key once, stores only its hash, defaults to read-only, and revokes", async () => {
    const acc = await ok("accounts", "create", "--name", "Keys");
    const k = await ok("keys", "create", "--account", String(acc.id));
    expect(k.scope).toBe("read");
    expect(String(k.key)).toMatch(/^svc_[0-9A-Za-z]{43}$/);
    const row = await prisma.apiKey.findUniqueOrThrow({ where: { id: String(k.id) } });
    expect(row.hash).toBe(createHash("sha256").update(String(k.key)).digest("hex"));
    expect(JSON.stringify(row)).not.toContain(String(k.key));
    const full = await ok("keys", "create", "--account", String(acc.id), "--scope", "full");
    expect(full.scope).toBe("full");
    await ok("keys", "revoke", "--key", String(k.id));
    expect((await prisma.apiKey.findUniqueOrThrow({ where: { id: String(k.id) } })).revokedAt).not.toBeNull();
  });

  it("marks a domain verified only with --force", async () => {
    const acc = await ok("accounts", "create", "--name", "Dom");
    await prisma.domain.create({
      data: {
        id: "dom_admintest00000001",
        accountId: String(acc.id),
        domain: "admin-test.com",
        dkimTokens: [],
        dnsRecords: [],
      },
    });
    expect(await runCommand(prisma, ["domains", "verify", "--domain", "admin-test.com"])).toMatchObject({ ok: false });
    expect(await ok("domains", "verify", "--domain", "Admin-Test.com.", "--force")).toMatchObject({
      status: "verified",
    });
    expect((await prisma.domain.findUniqueOrThrow({ where: { domain: "admin-test.com" } })).status).toBe("verified");
  });

  it.each([
    [["accounts", "create"], "required option '--name <name>' not specified"],
    [["accounts", "create", "--name", "x", "--plan", "gold"], "Allowed choices are selfhosted, free, scale"],
    [["accounts", "create", "--name", "x", "--plna", "scale"], "unknown option '--plna'"],
    [["accounts", "set-plan", "--account", "acc_missing", "--plan", "scale"], "account acc_missing not found"],
    [["accounts", "show", "--account", "acc_missing"], "account acc_missing not found"],
    [["accounts", "set-retention", "--account", "acc_missing", "--days", "30"], "account acc_missing not found"],
    [["accounts", "set-retention", "--account", "acc_x", "--days", "0"], 'from 1 to 3650, or "forever"'],
    [["accounts", "set-retention", "--account", "acc_x", "--days", "1.5"], "from 1 to 3650"],
    [["accounts", "set-retention", "--account", "acc_x"], "required option '--days <days>' not specified"],
    [["accounts", "create", "--name", "x", "--retention-days", "never"], "from 1 to 3650"],
    [["keys", "create", "--account", "acc_missing"], "not found"],
    [["keys", "create", "--account", "acc_x", "--scope", "admin"], "Allowed choices are read, full"],
    [["keys", "revoke", "--key", "key_missing"], "not found"],
    [["keys", "show", "--key", "key_missing"], "not found"],
    [["domains", "verify", "--domain", "nope.com", "--force"], "not found"],
    [["domains", "verify", "--domain", "nope.com"], "--force is required"],
    [["domains", "show", "--domain", "nope.com"], "not found"],
    [["accounts", "list", "extra"], "too many arguments"],
    [["bogus"], "unknown command 'bogus'"],
  ])("refuses %j with a clear error", async (argv, message) => {
    const r = await runCommand(prisma, argv);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain(message);
  });
});
