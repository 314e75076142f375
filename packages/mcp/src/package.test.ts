import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { installPacked, type PackedInstall } from "@mailroom/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

/**
 * `mailroom-mcp` as published: `npm pack` (its build runs), unpacked outside the checkout (no
 * src/, no tsx), started by an MCP client over stdio against a live API.
 */
describe("mailroom-mcp package", () => {
  let pkg: PackedInstall;
  let stack: Stack;
  let acct: TestAccount;
  let bin: string;

  beforeAll(async () => {
    pkg = await installPacked("packages/mcp", ["@modelcontextprotocol/sdk", "zod"]);
    bin = path.join(pkg.dir, "node_modules/mailroom-mcp/bin/mailroom-mcp.js");
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
  }, 180_000);
  afterAll(async () => {
    await stack?.close();
    await pkg?.cleanup();
  });

  it("ships the bin and the build, not the sources", () => {
    expect(pkg.files).toEqual(
      expect.arrayContaining([
        "LICENSE",
        "README.md",
        "bin/mailroom-mcp.js",
        "dist/cli.js",
        "dist/bridge.js",
        "dist/bridge.d.ts",
      ]),
    );
    expect(pkg.files.filter((f) => f.startsWith("src/"))).toEqual([]);
  });

  it("serves the API's tools over stdio from outside the checkout", async () => {
    const client = new Client({ name: "packed-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [bin],
        cwd: pkg.dir,
        env: { PATH: process.env.PATH ?? "", MAILROOM_API_URL: stack.apiUrl, MAILROOM_API_KEY: acct.key },
        stderr: "pipe",
      }),
    );
    try {
      expect(client.getServerVersion()?.name).toBe("mailroom");
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["list_domains", "get_email", "wait_for_email"]));
      const r = (await client.callTool({ name: "list_domains", arguments: {} })) as {
        isError?: boolean;
        structuredContent?: unknown;
      };
      expect(r.isError).toBeFalsy();
      expect(r.structuredContent).toEqual({ data: [], nextCursor: null });
    } finally {
      await client.close();
    }
  });

  it("refuses to start without a key: one line on stderr, exit code 2", async () => {
    const err = await promisify(execFile)(process.execPath, [bin], {
      cwd: pkg.dir,
      env: { PATH: process.env.PATH },
    }).catch((e: { code: number; stderr: string }) => e);
    expect(err).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^mailroom-mcp: MAILROOM_API_KEY is required/),
    });
  });
});
