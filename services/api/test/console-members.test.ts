import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import {
  API_ONLY,
  type ConsoleClient,
  consoleClient,
  createMember,
  type Stack,
  startStack,
  type TestAccount,
} from "@mailroom/stack";

/**
 * Members and settings from the console (issue 26 item 4): a member lists, invites (one-time
 * set-password link, shown once) and removes the members of their own account, never another's,
 * never the last one; renames the account and changes its retention (PATCH /account, also REST).
 * The installation's DEFAULT_RETENTION_DAYS is shown on GET /account.
 */
let stack: Stack;
let a: TestAccount;
let b: TestAccount;
let alice: ConsoleClient;
let bob: ConsoleClient;
let carol: ConsoleClient;
let bobId: string;
let carolId: string;
const PASSWORD = "correct horse battery";

async function signedIn(accountId: string, email: string) {
  const m = await createMember(stack, accountId, email, PASSWORD, { cheapHash: true });
  const c = consoleClient(stack);
  expect((await c.signIn(email, PASSWORD)).status).toBe(201);
  return { client: c, id: m.id };
}

beforeAll(async () => {
  stack = await startStack({ ...API_ONLY, apiEnv: { DEFAULT_RETENTION_DAYS: "90" } });
  a = await stack.account();
  b = await stack.account();
  alice = (await signedIn(a.accountId, "alice@members.example")).client;
  ({ client: bob, id: bobId } = await signedIn(a.accountId, "bob@members.example"));
  ({ client: carol, id: carolId } = await signedIn(b.accountId, "carol@members.example"));
});
afterAll(async () => {
  await stack?.close();
});

const members = async (c: ConsoleClient) => {
  const r = await c.call("GET", "/console/api/members");
  expect(r.status).toBe(200);
  return r.body.data as { id: string; email: string; passwordSet: boolean; you: boolean }[];
};

describe("console members", () => {
  it("lists the account's own members, oldest first, marking the caller, and no secrets", async () => {
    const list = await members(alice);
    expect(list.map((m) => [m.email, m.passwordSet, m.you])).toEqual([
      ["alice@members.example", true, true],
      ["bob@members.example", true, false],
    ]);
    expect(JSON.stringify(list)).not.toMatch(/scrypt|hash/i);
    expect((await members(carol)).map((m) => m.email)).toEqual(["carol@members.example"]);
  });

  it("invites with a one-time link: only its hash is stored, it sets the password once, the new member signs in", async () => {
    const r = await alice.call("POST", "/console/api/members", { email: "  Dave@Members.Example " });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ email: "dave@members.example", passwordSet: false });
    const token = new URL(r.body.setPasswordUrl).hash.replace("#token=", "");
    const row = await stack.prisma.member.findUniqueOrThrow({
      where: { email: "dave@members.example" },
      include: { tokens: true },
    });
    expect(row.accountId).toBe(a.accountId);
    expect(row.passwordHash).toBeNull();
    expect(row.tokens.map((t) => t.hash)).toEqual([createHash("sha256").update(token).digest("hex")]);
    expect((await members(alice)).map((m) => m.email)).toContain("dave@members.example");
    // The list never shows the link again.
    expect(JSON.stringify(await members(alice))).not.toContain(token);

    const anon = consoleClient(stack);
    expect((await anon.call("POST", "/console/api/password", { token, password: PASSWORD })).status).toBe(200);
    expect((await anon.call("POST", "/console/api/password", { token, password: PASSWORD })).status).not.toBe(200);
    const dave = consoleClient(stack);
    const s = await dave.signIn("dave@members.example", PASSWORD);
    expect([s.status, s.body.accountId]).toEqual([201, a.accountId]);
  });

  it("refuses a bad email (400), an email already a member anywhere (409), and changes nothing", async () => {
    const before = await stack.prisma.member.count();
    for (const [body, status, message] of [
      [{ email: "not an email" }, 400, /email: must be an email address/],
      [{}, 400, /email/],
      [{ email: "x@y.example", role: "admin" }, 400, /role/],
      [{ email: "carol@members.example" }, 409, /already a member/],
      [{ email: "ALICE@members.example" }, 409, /already a member/],
    ] as const) {
      const r = await alice.call("POST", "/console/api/members", body);
      expect([body, r.status]).toEqual([body, status]);
      expect(r.body.error).toMatch(message);
    }
    expect(await stack.prisma.member.count()).toBe(before);
  });

  it("another account's member: 404, untouched; without a session 401, without the CSRF token 403", async () => {
    const r = await carol.call("DELETE", `/console/api/members/${bobId}`);
    expect([r.status, r.body]).toEqual([404, { error: "Member not found" }]);
    expect(await stack.prisma.member.findUnique({ where: { id: bobId } })).not.toBeNull();
    expect((await consoleClient(stack).call("GET", "/console/api/members")).status).toBe(401);
    const noCsrf = await alice.call("DELETE", `/console/api/members/${bobId}`, undefined, { "x-csrf-token": "" });
    expect(noCsrf.status).toBe(403);
    // Members are the console's: an API key has no such route.
    expect((await a.api("GET", "/api/v1/members")).status).toBe(404);
    expect(await stack.prisma.member.findUnique({ where: { id: bobId } })).not.toBeNull();
  });

  it("removes a member, whose session ends at once; a member may leave; the last member cannot be removed", async () => {
    expect((await alice.call("DELETE", `/console/api/members/${bobId}`)).status).toBe(204);
    expect(await stack.prisma.member.findUnique({ where: { id: bobId } })).toBeNull();
    expect((await bob.call("GET", "/console/api/members")).status).toBe(401);

    const last = await carol.call("DELETE", `/console/api/members/${carolId}`);
    expect([last.status, last.body.error]).toEqual([409, expect.stringMatching(/last member cannot be removed/)]);
    expect(await stack.prisma.member.findUnique({ where: { id: carolId } })).not.toBeNull();

    const dave = consoleClient(stack);
    expect((await dave.signIn("dave@members.example", PASSWORD)).status).toBe(201);
    const daveId = (await members(dave)).find((m) => m.you)?.id;
    expect((await dave.call("DELETE", `/console/api/members/${daveId}`)).status).toBe(204);
    expect((await dave.call("GET", "/console/api/members")).status).toBe(401);
    expect((await members(alice)).map((m) => m.email)).toEqual(["alice@members.example"]);
  });
});

describe("account settings", () => {
  it("shows the installation's default retention and the account's own", async () => {
    const r = await a.api("GET", "/api/v1/account");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ defaultRetentionDays: 90, retentionDays: 30 });
    expect((await alice.call("GET", "/console/api/overview")).body.account.defaultRetentionDays).toBe(90);
  });

  it("renames the account and changes its retention from the console, stored in Postgres", async () => {
    const r = await alice.call("PATCH", "/console/api/account", { name: "  Acme Mail ", retentionDays: 7 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: a.accountId, name: "Acme Mail", retentionDays: 7 });
    expect(await stack.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).toMatchObject({
      name: "Acme Mail",
      retentionDays: 7,
    });
    expect((await alice.call("PATCH", "/console/api/account", { retentionDays: null })).body.retentionDays).toBeNull();
    // Another account's member changes only their own account.
    expect((await carol.call("PATCH", "/console/api/account", { name: "Carol's" })).status).toBe(200);
    expect((await stack.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).name).toBe("Acme Mail");
  });

  it("refuses bad settings with 400 and a read-only key with 403, changing nothing", async () => {
    const before = await stack.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } });
    for (const [body, message] of [
      [{}, /give name, retentionDays or both/],
      [{ retentionDays: 0 }, /retentionDays: must be at least 1 day/],
      [{ retentionDays: 3651 }, /retentionDays: must be at most 3650/],
      [{ retentionDays: 1.5 }, /retentionDays: must be a whole number/],
      [{ retentionDays: "30" }, /retentionDays: must be a whole number/],
      [{ name: "" }, /name: must not be empty/],
      [{ plan: "scale" }, /plan/],
    ] as const) {
      const r = await alice.call("PATCH", "/console/api/account", body);
      expect([body, r.status]).toEqual([body, 400]);
      expect(r.body.error).toMatch(message);
    }
    const readKey = String((await stack.admin("keys", "create", "--account", a.accountId, "--scope", "read")).key);
    const ro = await fetch(`${stack.apiUrl}/api/v1/account`, {
      method: "PATCH",
      headers: { Authorization: `Bearer ${readKey}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "nope" }),
    });
    expect(ro.status).toBe(403);
    expect(await stack.prisma.account.findUniqueOrThrow({ where: { id: a.accountId } })).toEqual(before);
  });
});
