import type { IncomingMessage } from "node:http";
import { AppError } from "@mailroom/core";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import express, { type RequestHandler, type Router } from "express";
import { authenticate, isReadMethod, requireWrite } from "../lib/auth.ts";
import { jsonBody } from "../lib/json-body.ts";
import { refuseUnstorableText } from "../lib/storable-text.ts";
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
    // POST is every MCP call (the tool decides, spec §5.6); any other method but GET/HEAD is a
    // write by spec §5.5, so a read-only key gets 403 for it here as on /api/v1.
    if (req.method !== "POST" && !isReadMethod(req.method)) requireWrite(req.auth);
    next();
  });
  // The same per-key budget as REST, when the app has one.
  if (opts.rateLimit) r.use(opts.rateLimit);
  // Text Postgres cannot store is refused as on /api/v1: 400 {error}, before any tool runs.
  r.post("/", requireJsonExchange, jsonBody({ limit: opts.bodyLimit }), refuseUnstorableText, async (req, res) => {
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
  r.all("/", (req, _res) => {
    throw new AppError("method_not_allowed", `Method ${req.method} is not allowed on /mcp; allowed: POST`, {
      Allow: "POST",
    });
  });
  return r;
}

/**
 * The HTTP-level checks the Streamable HTTP transport would make, made first so that their answer
 * is the API's `{ "error": string }` body (spec §7) like every other 406/415. Errors inside a
 * well-formed exchange (an invalid JSON-RPC message) stay JSON-RPC errors: that is the protocol.
 */
const requireJsonExchange: RequestHandler = (req, res, next) => {
  const accept = req.header("accept") ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
    res.status(406).json({ error: "Accept: must list both application/json and text/event-stream (MCP)" });
    return;
  }
  if (!req.is("application/json")) {
    throw new AppError("unsupported_media_type", "Content-Type: must be application/json");
  }
  next();
};
