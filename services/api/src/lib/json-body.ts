import type { IncomingMessage } from "node:http";
import express, { type RequestHandler } from "express";

/**
 * The deepest JSON a request body may nest. The deepest body the API takes is an MCP call of
 * `create_shield_rule` (envelope, params, arguments, conditions, one condition: 5 levels); 32 leaves
 * room for any client's wrapping and refuses the 10,000-deep arrays that would otherwise be parsed
 * into objects and walked by every guard after the parser.
 */
export const MAX_JSON_DEPTH = 32;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * How deep `text` nests, read in one pass without parsing (brackets inside strings do not count),
 * stopping as soon as it exceeds `max`. Works on UTF-8 bytes because every structural character is
 * ASCII and no byte of a multi-byte UTF-8 sequence is below 0x80.
 */
export function jsonDepthExceeds(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) {
      inString = true;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/** JSON in any other Unicode encoding body-parser accepts (utf-16…) is read as UTF-8 first. */
function utf8Of(buf: Buffer, encoding: string | null): Uint8Array {
  if (!encoding || /^utf-?8$/i.test(encoding)) return buf;
  try {
    return new TextEncoder().encode(new TextDecoder(encoding).decode(buf));
  } catch {
    // An encoding TextDecoder does not know: body-parser refuses or decodes it; scan the bytes as they are.
    return buf;
  }
}

/** body-parser passes the error on with this `type`; errorHandler answers it with 400 and its message. */
export const JSON_TOO_DEEP = "entity.too.deep";

class JsonTooDeep extends Error {
  readonly type = JSON_TOO_DEEP;
  constructor(max: number) {
    super(`body: JSON nests deeper than ${max} levels`);
  }
}

const refuseDeep = (_req: IncomingMessage, _res: unknown, buf: Buffer, encoding: string) => {
  if (jsonDepthExceeds(utf8Of(buf, encoding), MAX_JSON_DEPTH)) throw new JsonTooDeep(MAX_JSON_DEPTH);
};

/**
 * The one JSON body parser of the API (REST, MCP, console): express.json with its size limit, and
 * a depth check on the raw bytes before JSON.parse, so a deeply nested body costs one linear scan
 * and a 400, never a parse into a deep structure that later walks would have to survive.
 */
export function jsonBody(opts: { limit: string; anyType?: boolean }): RequestHandler {
  return express.json({
    limit: opts.limit,
    verify: refuseDeep,
    ...(opts.anyType ? { type: () => true } : {}),
  });
}
