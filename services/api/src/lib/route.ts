import type { RequestHandler } from "express";
import type { z } from "zod";

/**
 * What the OpenAPI document says about one route. The schemas are the very ones the handler
 * validates with, so the document cannot drift from the code.
 */
export type RouteDoc = {
  summary: string;
  tag: string;
  description?: string;
  /** Path parameters (`:id` → `{id}`), one property each. */
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Success responses by status; `schema` omitted means no body (204) or a non-JSON body. */
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
  /** Error statuses this route can answer besides the ones every route has (401, 403, 429, 500). */
  errors?: Record<number, string>;
  /** Routes served without an API key (the OpenAPI document itself). */
  public?: boolean;
};

const DOC = Symbol.for("mailroom.openapi.route");

type Documented = RequestHandler & { [DOC]?: RouteDoc };

/** Attaches `doc` to the handler; the OpenAPI builder finds it by walking the express router stack. */
export function documented(doc: RouteDoc, handler: RequestHandler): RequestHandler {
  const h: Documented = (req, res, next) => handler(req, res, next);
  h[DOC] = doc;
  return h;
}

export function docOf(handler: unknown): RouteDoc | undefined {
  return typeof handler === "function" ? (handler as Documented)[DOC] : undefined;
}
