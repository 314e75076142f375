import type { IncomingMessage } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import express, { type RequestHandler, type Router } from "express";
import { authenticate } from "../lib/auth.ts";
import type { OpsContext } from "../ops/context.ts";
import { createMcpServer } from "./server.ts";

/**
 * `/mcp`: the MCP Streamable HTTP endpoint. Stateless: every POST carries the API key, is
 * authenticated like a REST request (401 otherwise) and is served by a server bound to that
 * account, so a revoked key stops working at once and no session state lives in one replica.
 * Replies are plain JSON (no SSE stream): no tool sends progress or server-initiated messages.
 */
export function mcpRouter(ctx: OpsContext, opts: { bodyLimit: string; rateLimit?: RequestHandler }): Router {
  const r = express.Router();
  // Authenticate before parsing, as /api/v1 does: an anonymous caller learns nothing but 401.
  // Scopes are not checked here: over MCP every call is a POST and the tool decides (spec §5.6).
  r.use(async (req, _res, next) => {
    req.auth = await authenticate(ctx.prisma, req.header("authorization"));
    next();
  });
  // The same per-key budget as REST, when the app has one.
  if (opts.rateLimit) r.use(opts.rateLimit);
  r.post("/", express.json({ limit: opts.bodyLimit }), async (req, res) => {
    const requestId = String(res.getHeader("X-Request-Id") ?? "");
    const auth = req.auth;
    if (!auth) throw new Error("mcp: request reached the handler unauthenticated");
    const server = createMcpServer(ctx, auth, requestId);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    // Our `req.auth` is closed over above; the SDK's own AuthInfo (extra.authInfo) is not used.
    await transport.handleRequest(req as unknown as IncomingMessage, res, req.body);
  });
  // Stateless: there is no server-to-client stream to open (GET) and no session to end (DELETE).
  r.all("/", (_req, res) => {
    res
      .status(405)
      .setHeader("Allow", "POST")
      .json({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: use POST" }, id: null });
  });
  return r;
}
