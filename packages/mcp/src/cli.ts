/**
 * The `mailroom-mcp` command: the bridge (bridge.ts) on this process's stdin/stdout. Configuration
 * errors go to stderr with exit code 2; stdout carries protocol messages only.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { type BridgeEnv, createBridge, loadBridgeEnv } from "./bridge.ts";

async function main(): Promise<void> {
  let env: BridgeEnv;
  try {
    env = loadBridgeEnv(process.env);
  } catch (err) {
    process.stderr.write(`mailroom-mcp: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const server = createBridge(env);
  await server.connect(new StdioServerTransport());
  process.stderr.write(`mailroom-mcp: serving the tools of ${env.mcpUrl.href} on stdio\n`);
}

await main();
