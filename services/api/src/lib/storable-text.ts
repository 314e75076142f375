import { invalid } from "@mailroom/core";
import type { RequestHandler } from "express";

// In a `u` regex a surrogate pair is one code point, so this matches only unpaired halves.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Why a string cannot be stored as Postgres text (or jsonb): U+0000 is refused outright (22021,
 * 22P05), and a lone UTF-16 surrogate has no UTF-8 form (the driver would silently write U+FFFD).
 * Any other character, control characters included, is stored as given.
 */
export function unstorableReason(s: string): string | null {
  if (s.includes("\u0000")) return "must not contain U+0000 (NUL)";
  if (LONE_SURROGATE.test(s)) return "must be valid Unicode (it holds a lone surrogate)";
  return null;
}

/** A value still to look at, and how it was reached: a chain to its parent, so no path is copied per level. */
type Pending = { value: unknown; key: string | undefined; parent: Pending | undefined };

const pathOf = (p: Pending | undefined): string[] => {
  const keys: string[] = [];
  for (let at = p; at; at = at.parent) if (at.key !== undefined) keys.push(at.key);
  return keys.reverse();
};

/**
 * The first key or string value under `value` that cannot be stored, as `[path, reason]`. Walks
 * with an explicit stack (no recursion, so no depth can overflow the call stack) and touches each
 * value once; the path is built only for the one it reports.
 */
export function findUnstorable(value: unknown): [string[], string] | null {
  const stack: Pending[] = [{ value, key: undefined, parent: undefined }];
  for (let p = stack.pop(); p; p = stack.pop()) {
    // A bad key is reported against its parent: the key itself cannot be printed usefully.
    const keyReason = p.key === undefined ? null : unstorableReason(p.key);
    if (keyReason) return [pathOf(p.parent), `has a key that ${keyReason}`];
    if (typeof p.value === "string") {
      const reason = unstorableReason(p.value);
      if (reason) return [pathOf(p), reason];
    } else if (p.value !== null && typeof p.value === "object") {
      // Pushed in reverse, so fields are looked at in order (the error names the first bad one).
      const entries = Object.entries(p.value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        stack.push({ value: child, key, parent: p });
      }
    }
  }
  return null;
}

const fieldName = (path: readonly string[], where: string) => (path.length ? path.join(".") : where);

/**
 * Refuses, with 400 `{error}`, a request whose path, query string or parsed JSON body holds text
 * Postgres cannot store, before any handler sees it: one guard for every REST route and every MCP
 * tool call (mounted after each JSON body parser), instead of a 500 from the database or a partial
 * write. Errors name the field the way zod errors do (`conditions.0.value: …`, `q: …`, `path: …`).
 */
export const refuseUnstorableText: RequestHandler = (req, _res, next) => {
  const rawPath = req.originalUrl.split("?", 1)[0] ?? "";
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    throw invalid("path: is not valid percent-encoded UTF-8");
  }
  const inPath = unstorableReason(path);
  if (inPath) throw invalid(`path: ${inPath}`);
  const inQuery = findUnstorable(req.query);
  if (inQuery) throw invalid(`${fieldName(inQuery[0], "query")}: ${inQuery[1]}`);
  const inBody = findUnstorable(req.body);
  if (inBody) throw invalid(`${fieldName(inBody[0], "body")}: ${inBody[1]}`);
  next();
};
