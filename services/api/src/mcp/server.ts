import { AppError } from "@mailroom/core";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type AuthContext, requireWrite } from "../lib/auth.ts";
import type { OpsContext } from "../ops/context.ts";
import { MCP_INSTRUCTIONS, MCP_SERVER_NAME, MCP_SERVER_VERSION } from "./info.ts";
import type { ToolDef } from "./tool.ts";
import { deliveryTools } from "./tools-deliveries.ts";
import { mailTools } from "./tools-mail.ts";
import { readTools } from "./tools-read.ts";
import { statsTools } from "./tools-stats.ts";
import { writeTools } from "./tools-write.ts";

/** Every tool, reads first. */
export const allTools: readonly ToolDef[] = [
  ...readTools,
  ...deliveryTools,
  ...statsTools,
  ...writeTools,
  ...mailTools,
];

/** A successful result: the REST object, as JSON text for any client and as structured content. */
export function toolResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

export function toolError(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

/**
 * Runs one tool for one caller: the scope gate first (nothing is performed for a read-only key),
 * then the service layer. An AppError becomes a tool error carrying the same message the REST API
 * would send; anything else is logged and reported without internals.
 */
export async function callTool(
  tool: ToolDef,
  ctx: OpsContext,
  auth: AuthContext,
  args: unknown,
  requestId: string,
  signal?: AbortSignal,
): Promise<CallToolResult> {
  try {
    if (tool.access === "write") requireWrite(auth);
    return toolResult(await tool.run(ctx, auth.accountId, args, signal));
  } catch (err) {
    if (err instanceof AppError) return toolError(err.message);
    ctx.logger.error({ err, requestId, tool: tool.name, accountId: auth.accountId }, "mcp tool failed");
    return toolError(`Internal server error (request ${requestId})`);
  }
}

/**
 * An MCP server bound to one authenticated caller. The HTTP transport is stateless, so one is built
 * per request; every tool acts on `auth.accountId` only.
 */
export function createMcpServer(ctx: OpsContext, auth: AuthContext, requestId: string): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
    { capabilities: { tools: {} }, instructions: MCP_INSTRUCTIONS },
  );
  for (const tool of allTools) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, annotations: tool.annotations },
      (args: unknown, extra: { signal: AbortSignal }) => callTool(tool, ctx, auth, args, requestId, extra.signal),
    );
  }
  return server;
}
