import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * `mailroom-mcp` (the stdio entry point) spawned as a real child process through the bin npm links
 * into node_modules/.bin, driven by the SDK's StdioClientTransport against a running API.
 */
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const bin = resolve(repoRoot, "node_modules/.bin/mailroom-mcp");

type Result = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: any };

describe("mailroom-mcp (stdio)", () => {
  let stack: Stack;
  let acct: TestAccount;
  let readKey: string;
  const clients: Client[] = [];

  async function spawnBridge(env: Record<string, string>): Promise<Client> {
    const client = new Client({ name: "mailroom-stdio-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [bin],
        env: { PATH: process.env.PATH ?? "", ...env },
        cwd: repoRoot,
        stderr: "pipe",
      }),
    );
    clients.push(client);
    return client;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as Result;

  beforeAll(async () => {
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
    readKey = String((await stack.admin("keys", "create", "--account", acct.accountId, "--scope", "read")).key);
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await stack?.close();
  });

  it("is linked as a bin by npm", () => {
    expect(existsSync(bin)).toBe(true);
  });

  it("serves the API's tools unchanged and runs them with the key from MAILROOM_API_KEY", async () => {
    const client = await spawnBridge({ MAILROOM_API_URL: stack.apiUrl, MAILROOM_API_KEY: acct.key });
    expect(client.getServerVersion()?.name).toBe("mailroom");

    const http = new Client({ name: "direct", version: "1.0.0" });
    await http.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${acct.key}` } },
      }),
    );
    clients.push(http);
    expect((await client.listTools()).tools).toEqual((await http.listTools()).tools);
    // The bridge keeps its own copy of what /mcp says about itself (it ships alone): the same, to the letter.
    expect([client.getServerVersion(), client.getInstructions()]).toEqual([
      http.getServerVersion(),
      http.getInstructions(),
    ]);

    const dom = await acct.api("POST", "/api/v1/domains", { domain: "stdio-example.com" });
    const created = await call(client, "create_inbox", { domainId: dom.body.id, localPart: "agent" });
    expect(created.isError).toBeFalsy();
    expect(created.structuredContent).toMatchObject({ domainId: dom.body.id, localPart: "agent" });
    const listed = await call(client, "list_inboxes");
    expect(listed.structuredContent).toEqual((await acct.api("GET", "/api/v1/addresses")).body);
    expect(JSON.parse(String(listed.content[0]?.text))).toEqual(listed.structuredContent);
  });

  it("accepts the API URL with /api/v1 and keeps the read-only scope: reads work, writes are refused", async () => {
    const client = await spawnBridge({ MAILROOM_API_URL: `${stack.apiUrl}/api/v1/`, MAILROOM_API_KEY: readKey });
    const domains = await call(client, "list_domains");
    expect(domains.isError).toBeFalsy();
    expect(domains.structuredContent.data).toHaveLength(1);
    const refused = await call(client, "create_shield_rule", {
      name: "nope",
      action: "block",
      conditions: [{ field: "from", operator: "contains", value: "x" }],
    });
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toMatch(/read-only.*full-access key is needed/);
    expect(await stack.prisma.shieldRule.count({ where: { accountId: acct.accountId } })).toBe(0);
  });

  it("reports a revoked key and an unreachable API as tool errors an agent can relay", async () => {
    const created = await stack.admin("keys", "create", "--account", acct.accountId, "--scope", "full");
    await stack.admin("keys", "revoke", "--key", String(created.id));
    const revoked = String(created.key);
    const client = await spawnBridge({ MAILROOM_API_URL: stack.apiUrl, MAILROOM_API_KEY: revoked });
    const r = await call(client, "list_domains");
    expect(r.isError).toBe(true);
    expect(r.content[0]?.text).toBe(
      `The mailroom API at ${stack.apiUrl} refused MAILROOM_API_KEY (401): Invalid or revoked API key`,
    );

    const down = await spawnBridge({ MAILROOM_API_URL: "http://127.0.0.1:1", MAILROOM_API_KEY: acct.key });
    const d = await call(down, "list_domains");
    expect(d.isError).toBe(true);
    expect(d.content[0]?.text).toMatch(/^Cannot reach the mailroom API at http:\/\/127\.0\.0\.1:1\/mcp/);
  });

  it("refuses to start without MAILROOM_API_KEY, with one clear line on stderr", async () => {
    const child = spawn(process.execPath, [bin], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? "", MAILROOM_API_URL: stack.apiUrl },
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const code = await new Promise<number | null>((done) => child.on("close", done));
    expect(code).toBe(2);
    expect(stderr).toMatch(/^mailroom-mcp: MAILROOM_API_KEY is required/);
  });
});
