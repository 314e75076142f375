import { createHash } from "node:crypto";
import { AppError } from "@mailroom/core";
import { type PrismaClient, poolOf } from "@mailroom/db";
import type { Request, RequestHandler } from "express";

export type KeyScope = "read" | "full";
export type AuthContext = { accountId: string; keyId: string; scope: KeyScope };

declare global {
  namespace Express {
    interface Request {
      auth?: AuthContext;
      /**
       * Checks again that the credential of this request still holds (key not revoked, session not
       * ended) and answers its account; throws AppError("unauthorized") otherwise. Long-lived
       * responses (the event stream) call it on every heartbeat. Set by whichever middleware
       * authenticated the request: the API key's, or the console session's.
       */
      reauthenticate?: () => Promise<string>;
      /** A read started beside the key check (authMiddleware's `prefetch`); taken by its route. */
      prefetched?: Promise<unknown>;
    }
  }
}

export const hashApiKey = (key: string): string => createHash("sha256").update(key).digest("hex");

const BEARER = /^Bearer (svc_[A-Za-z0-9_-]{16,200})$/;

type KeyRow = { id: string; accountId: string; scope: string | null; revokedAt: Date | null; lastUsedAt: Date | null };

/** Resolves `Authorization: Bearer svc_…` to an account. Spec §5: 401 for missing, malformed, unknown or revoked. */
export async function authenticate(prisma: PrismaClient, header: string | undefined): Promise<AuthContext> {
  const m = header ? BEARER.exec(header.trim()) : null;
  if (!m) throw new AppError("unauthorized", "Missing or malformed Authorization header (expected: Bearer svc_…)");
  // A named statement on node-postgres: every request runs it, so it is parsed and planned once per
  // connection, and skips Prisma's query compilation (bench:api, issue 13). Never cached: a revoked
  // key is refused on the very next request.
  const { rows } = await poolOf(prisma).query<KeyRow>({
    name: "api-key-by-hash",
    text: `SELECT id, "accountId", scope, "revokedAt", "lastUsedAt" FROM api_keys WHERE hash = $1`,
    values: [hashApiKey(m[1] as string)],
  });
  const key = rows[0];
  if (!key || key.revokedAt) throw new AppError("unauthorized", "Invalid or revoked API key");
  await touchLastUsed(prisma, key.id, key.lastUsedAt);
  // Keys created before scopes existed (null) keep full access (spec §5.7).
  return { accountId: key.accountId, keyId: key.id, scope: key.scope === "read" ? "read" : "full" };
}

/** `lastUsedAt` for the console's key list, written at most once a minute per key (not per request). */
const LAST_USED_EVERY_MS = 60_000;
async function touchLastUsed(prisma: PrismaClient, id: string, last: Date | null, now = new Date()): Promise<void> {
  if (last && now.getTime() - last.getTime() < LAST_USED_EVERY_MS) return;
  const stale = new Date(now.getTime() - LAST_USED_EVERY_MS);
  await prisma.apiKey.updateMany({
    where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: stale } }] },
    data: { lastUsedAt: now },
  });
}

export const isReadMethod = (method: string): boolean => method === "GET" || method === "HEAD";

export function requireWrite(auth: AuthContext): void {
  if (auth.scope !== "full") {
    throw new AppError("forbidden", "This API key is read-only; a full-access key is needed for this operation");
  }
}

/**
 * A read a route can start beside the key check, scoped by the key's hash rather than the account
 * (the emails list): the two round trips overlap instead of following each other. Reads only; its
 * result, or its error (a bad query string), reaches the caller only through the route, after the
 * key check and the rate limit have passed, so an anonymous caller still learns nothing but 401.
 */
export type Prefetch = (req: Request, keyHash: string) => Promise<unknown> | undefined;

function startPrefetch(req: Request, header: string | undefined, prefetch: Prefetch): void {
  const m = header ? BEARER.exec(header.trim()) : null;
  if (!m) return;
  const started = prefetch(req, hashApiKey(m[1] as string));
  if (!started) return;
  // Handled here so a read whose key then fails is not an unhandled rejection; the route awaits it.
  started.catch(() => undefined);
  req.prefetched = started;
}

/** The read started beside the key check for this request, once (undefined: none, read it now). */
export function takePrefetched<T>(req: Request): Promise<T> | undefined {
  const p = req.prefetched as Promise<T> | undefined;
  req.prefetched = undefined;
  return p;
}

/** Authenticates every request and refuses writes by read-only keys before any handler runs. */
export function authMiddleware(prisma: PrismaClient, prefetch?: Prefetch): RequestHandler {
  return async (req, _res, next) => {
    const header = req.header("authorization");
    if (prefetch && isReadMethod(req.method)) startPrefetch(req, header, prefetch);
    req.auth = await authenticate(prisma, header);
    req.reauthenticate = async () => (await authenticate(prisma, header)).accountId;
    if (!isReadMethod(req.method)) requireWrite(req.auth);
    next();
  };
}
