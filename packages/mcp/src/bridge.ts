/**
 * `mailroom-mcp`: the MCP server for desktop agents, over stdio. It is a bridge, not a second
 * server: tools/list and tools/call are forwarded to the API's `/mcp` endpoint with the API key,
 * so the tools, their schemas, the scope checks and the results are exactly those of the running
 * service, and the desktop needs no database access. stdout carries protocol messages only;
 * diagnostics go to stderr.
 *
 * Env: MAILROOM_API_KEY (required, `svc_…`), MAILROOM_API_URL (default http://localhost:3000; the
 * base URL, `…/api/v1` or `…/mcp` are accepted too).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { MCP_INSTRUCTIONS, MCP_SERVER_NAME, MCP_SERVER_VERSION } from "./info.ts";

const envSchema = z.object({
  MAILROOM_API_KEY: z
    .string({ error: "is required: an API key (svc_…) created in the console or with the admin CLI" })
    .trim()
    .regex(/^svc_[A-Za-z0-9_-]{16,200}$/, "must be an API key (svc_…)"),
  MAILROOM_API_URL: z
    .string()
    .trim()
    .default("http://localhost:3000")
    .refine((u) => /^https?:\/\/[^/]/.test(u) && URL.canParse(u), "must be an http(s) URL, e.g. http://localhost:3000"),
});

export type BridgeEnv = { apiKey: string; mcpUrl: URL };

/** The longest tool call (wait_for_email, 120 s) plus room for the network. */
const UPSTREAM_CALL_TIMEOUT_MS = 150_000;

/** The `/mcp` URL for whatever base the user gave. */
export function mcpUrlOf(base: string): URL {
  const url = new URL(base);
  let path = url.pathname.replace(/\/+$/, "");
  if (!path.endsWith("/mcp")) path = `${path.replace(/\/api\/v1$/, "")}/mcp`;
  url.pathname = path;
  return url;
}

export function loadBridgeEnv(source: NodeJS.ProcessEnv): BridgeEnv {
  const r = envSchema.safeParse(source);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(`${String(issue?.path[0] ?? "env")} ${issue?.message ?? "is invalid"}`);
  }
  return { apiKey: r.data.MAILROOM_API_KEY, mcpUrl: mcpUrlOf(r.data.MAILROOM_API_URL) };
}

/** Upstream failures in words an agent (and its user) can act on. */
export function describeUpstreamError(err: unknown, url: URL): string {
  if (err instanceof StreamableHTTPError) {
    const body = /\{.*\}/s.exec(err.message)?.[0];
    let detail = err.message;
    try {
      detail = body ? String(JSON.parse(body).error ?? JSON.parse(body).message ?? detail) : detail;
    } catch {
      /* not JSON: keep the SDK's message */
    }
    if (err.code === 401) return `The mailroom API at ${url.origin} refused MAILROOM_API_KEY (401): ${detail}`;
    return `The mailroom API at ${url.href} answered ${err.code}: ${detail}`;
  }
  const msg = err instanceof Error ? err.message : String(err);
  return `Cannot reach the mailroom API at ${url.href} (set MAILROOM_API_URL): ${msg}`;
}

/** A stdio MCP server whose tools are those of the API at `env.mcpUrl`. */
export function createBridge(env: BridgeEnv): Server {
  let upstream: Promise<Client> | undefined;
  const connectUpstream = (): Promise<Client> => {
    upstream ??= (async () => {
      const client = new Client({ name: "mailroom-mcp-stdio", version: MCP_SERVER_VERSION });
      const transport = new StreamableHTTPClientTransport(env.mcpUrl, {
        requestInit: { headers: { Authorization: `Bearer ${env.apiKey}` } },
      });
      await client.connect(transport);
      return client;
    })().catch((err: unknown) => {
      // Retry on the next call: the API may simply not have been up yet.
      upstream = undefined;
      throw new Error(describeUpstreamError(err, env.mcpUrl));
    });
    return upstream;
  };
  const server = new Server(
    { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
    { capabilities: { tools: {} }, instructions: MCP_INSTRUCTIONS },
  );
  server.setRequestHandler(ListToolsRequestSchema, async (req) => {
    const client = await connectUpstream();
    try {
      return await client.listTools(req.params);
    } catch (err) {
      throw new Error(describeUpstreamError(err, env.mcpUrl));
    }
  });
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const failed = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true });
    let client: Client;
    try {
      client = await connectUpstream();
    } catch (err) {
      return failed((err as Error).message);
    }
    try {
      // wait_for_email blocks up to 120 s upstream: longer than the SDK's default 60 s request timeout.
      // The agent cancelling its call cancels the upstream one.
      return (await client.callTool(req.params, undefined, {
        timeout: UPSTREAM_CALL_TIMEOUT_MS,
        signal: extra.signal,
      })) as CallToolResult;
    } catch (err) {
      return failed(describeUpstreamError(err, env.mcpUrl));
    }
  });
  return server;
}
