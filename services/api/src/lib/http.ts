import { AppError, ERROR_STATUS, formatZodError, invalid } from "@mailroom/core";
import type { Logger } from "@mailroom/log";
import type { ErrorRequestHandler, Request } from "express";
import type { z } from "zod";
import { JSON_TOO_DEEP } from "./json-body.ts";

/** Parses with zod; any problem becomes a 400 naming the field and the rule. */
export function parse<S extends z.ZodType>(schema: S, value: unknown, where = "body"): z.infer<S> {
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  throw invalid(formatZodError(r.error, { root: where, dotted: true, unknownKeysAtKey: false, countRest: false }));
}

/** Query strings: same rules, and a problem without a field is reported against `query`. */
export const parseQuery = <S extends z.ZodType>(schema: S, value: unknown): z.infer<S> => parse(schema, value, "query");

/**
 * Shield-rule input: core's schemas word each message for core's `formatZodError`
 * (`conditions[0].value: …`, a problem of the whole body on its own, an unknown key at its own
 * path), and an absent body stays `undefined`, which those schemas refuse as a whole.
 */
export function parseRuleInput<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value ?? undefined);
  if (r.success) return r.data;
  throw invalid(formatZodError(r.error));
}

export function accountOf(req: Request): string {
  const id = req.auth?.accountId;
  if (!id) throw new AppError("unauthorized", "Missing or invalid API key");
  return id;
}

/** Maps every error to `{ "error": message }` with the code's status; a 500 never leaks internals. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const requestId = String(res.getHeader("X-Request-Id") ?? "");
    if (err instanceof AppError) {
      for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
      res.status(err.status).json({ error: err.message });
      return;
    }
    // body-parser errors carry a status and a type.
    const e = err as { type?: string; status?: number; message?: string };
    if (e.type === "entity.parse.failed") {
      res.status(400).json({ error: "body: malformed JSON" });
      return;
    }
    if (e.type === JSON_TOO_DEEP) {
      res.status(400).json({ error: e.message });
      return;
    }
    if (e.type === "entity.too.large") {
      res.status(ERROR_STATUS.payload_too_large).json({ error: "body: request body is too large" });
      return;
    }
    if (e.type === "encoding.unsupported" || e.type === "charset.unsupported") {
      res.status(415).json({ error: "body: unsupported encoding" });
      return;
    }
    // Any other client error body-parser reports (a gzip/deflate/br body that does not decompress,
    // a body shorter than its Content-Length, …) is the caller's, not a 500.
    const clientError = err as { expose?: boolean; code?: string };
    if (clientError.expose === true && typeof e.status === "number" && e.status >= 400 && e.status < 500) {
      const message = clientError.code?.startsWith("Z_")
        ? `body: could not be decoded as ${req.header("content-encoding") ?? "declared"} (${e.message})`
        : `body: ${e.message}`;
      res.status(e.status).json({ error: message });
      return;
    }
    logger.error({ err, requestId, method: req.method, path: req.path }, "unhandled error");
    res.status(500).json({ error: `Internal server error (request ${requestId})` });
  };
}
