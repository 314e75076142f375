import type { Request, Response } from "express";
import type { ProxyTrust } from "../lib/client-address.ts";
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
 * Secure when served over TLS: the connection itself, or X-Forwarded-Proto from a proxy the
 * operator said to trust (`proxies`). An untrusted client could otherwise ask for Secure cookies
 * over plain HTTP and lock itself out, or the reverse.
 */
function attributes(req: Request, proxies: ProxyTrust, maxAgeSeconds: number): string {
  const secure = proxies.overTls(req) ? "; Secure" : "";
  return `; Path=${COOKIE_PATH}; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

export function setSessionCookie(req: Request, res: Response, token: string, proxies: ProxyTrust): void {
  res.append(
    "Set-Cookie",
    `${SESSION_COOKIE}=${token}${attributes(req, proxies, Math.floor(SESSION_ABSOLUTE_MS / 1000))}`,
  );
}

export function clearSessionCookie(req: Request, res: Response, proxies: ProxyTrust): void {
  res.append("Set-Cookie", `${SESSION_COOKIE}=${attributes(req, proxies, 0)}`);
}
