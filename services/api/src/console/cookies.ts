import type { Request, Response } from "express";
import { SESSION_ABSOLUTE_MS } from "./sessions.ts";

export const SESSION_COOKIE = "mailroom_console";
/** The cookie is only sent to the console's own paths; /api/v1 and /mcp never receive it. */
const COOKIE_PATH = "/console";

/** A value that is not valid percent-encoding is no cookie of ours (the session check then says 401). */
function decoded(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

/** The value of one cookie from the Cookie header (no cookie-parser dependency for one cookie). */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.header("cookie");
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decoded(part.slice(eq + 1).trim());
  }
  return undefined;
}

/**
 * Served over TLS: the connection itself, or X-Forwarded-Proto from a proxy the operator said to
 * trust (API_TRUST_PROXY). An untrusted client could otherwise ask for Secure cookies over plain
 * HTTP and lock itself out, or the reverse.
 */
export function overTls(req: Request, trustProxy: boolean): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted) return true;
  if (!trustProxy) return false;
  const proto = req.header("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase();
  return proto === "https";
}

function attributes(req: Request, trustProxy: boolean, maxAgeSeconds: number): string {
  const secure = overTls(req, trustProxy) ? "; Secure" : "";
  return `; Path=${COOKIE_PATH}; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

export function setSessionCookie(req: Request, res: Response, token: string, trustProxy: boolean): void {
  res.append(
    "Set-Cookie",
    `${SESSION_COOKIE}=${token}${attributes(req, trustProxy, Math.floor(SESSION_ABSOLUTE_MS / 1000))}`,
  );
}

export function clearSessionCookie(req: Request, res: Response, trustProxy: boolean): void {
  res.append("Set-Cookie", `${SESSION_COOKIE}=${attributes(req, trustProxy, 0)}`);
}
