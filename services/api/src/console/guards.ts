import { timingSafeEqual } from "node:crypto";
import { AppError } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import type { Request, RequestHandler } from "express";
import { readCookie, SESSION_COOKIE } from "./cookies.ts";
import { type ConsoleMember, csrfTokenOf, resolveSession } from "./sessions.ts";

declare global {
  namespace Express {
    interface Request {
      /** Set by consoleSession(): the signed-in member. Never set on /api/v1 or /mcp. */
      member?: ConsoleMember;
      /** The raw session token from the cookie (for the CSRF token of GET /session). */
      sessionToken?: string;
    }
  }
}

const isWrite = (method: string) => method !== "GET" && method !== "HEAD";

/**
 * Console authentication: the session cookie only. An `Authorization` header is ignored here, so an
 * API key never opens the console (and /api/v1 reads only `Authorization`, so a cookie never acts
 * as a key). Sets `req.auth` for the member's account, so the REST routers and ops run unchanged;
 * `keyId` is the member id, so the per-key rate limit is per member.
 */
export function consoleSession(prisma: PrismaClient): RequestHandler {
  return async (req, _res, next) => {
    const token = readCookie(req, SESSION_COOKIE);
    const member = token ? await resolveSession(prisma, token) : null;
    if (!token || !member) throw new AppError("unauthorized", "Not signed in");
    req.member = member;
    req.sessionToken = token;
    req.auth = { accountId: member.accountId, keyId: member.memberId, scope: "full" };
    // The event stream re-checks the session on each heartbeat: sign-out or removal ends it.
    req.reauthenticate = async () => {
      const still = await resolveSession(prisma, token);
      if (!still) throw new AppError("unauthorized", "Not signed in");
      return still.accountId;
    };
    next();
  };
}

/**
 * CSRF on every write: the request must carry the session's token in X-CSRF-Token, which a page on
 * another origin cannot read or compute (the cookie is HttpOnly, the token comes from a same-origin
 * JSON response). SameSite=Lax already keeps the cookie off cross-site POSTs; this does not rely on it.
 */
export const requireCsrf: RequestHandler = (req, _res, next) => {
  if (!isWrite(req.method)) return next();
  const given = Buffer.from(req.header("x-csrf-token") ?? "");
  const expected = Buffer.from(csrfTokenOf(req.sessionToken ?? ""));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new AppError("forbidden", "Missing or wrong X-CSRF-Token (reload the console)");
  }
  next();
};

function sameOrigin(req: Request): boolean {
  const origin = req.header("origin");
  if (!origin) return true; // Not a browser, or a same-origin GET; browsers send Origin on every POST.
  try {
    return new URL(origin).host === req.header("host");
  } catch {
    return false;
  }
}

/**
 * Writes without a session (sign-in, set password) cannot carry a CSRF token: they must be JSON
 * (a cross-site form cannot send application/json without a CORS preflight, which we never grant)
 * and, when the browser names an Origin, come from this one. This stops login CSRF.
 */
export const requireJsonSameOrigin: RequestHandler = (req, _res, next) => {
  if (!isWrite(req.method)) return next();
  if (!sameOrigin(req)) throw new AppError("forbidden", "Cross-origin request refused");
  // req.is() is null without a body and false for any other type; an empty body has nothing to parse.
  if (req.header("content-length") !== "0" && req.is("application/json") === false) {
    throw new AppError("unsupported_media_type", "body: must be application/json");
  }
  next();
};
