import type { Request, RequestHandler, Response, Router } from "express";
import type { z } from "zod";
import type { OpsContext } from "../ops/context.ts";
import { parse, parseRuleInput } from "./http.ts";

/**
 * What the OpenAPI document says about one route, and what the route checks before its handler
 * runs: the schemas are both, so the document cannot drift from the validation.
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

export type Method = "GET" | "POST" | "PATCH" | "DELETE";

/** One request as a handler sees it: params and query already validated by the route's schemas. */
export type Call<P, Q> = { req: Request; res: Response; params: P; query: Q };

type Out<S> = S extends z.ZodType ? z.output<S> : Record<string, string>;

/**
 * One REST route, declared once: method, path (express syntax, relative to where the table is
 * mounted), its documentation and schemas, and the handler. The OpenAPI document, the 405 and
 * OPTIONS answers and the access log's route templates are all read from tables of these.
 */
export type Route = {
  method: Method;
  path: string;
  doc: RouteDoc;
  /**
   * How the body's problems are worded: `rest` is `field.0.sub: message` with a `body:` prefix at the
   * root; `rules` is core's `field[0].sub: message` (shield-rule input, whose messages are written for it).
   */
  messages?: "rest" | "rules";
  /**
   * `operation`: the body schema depends on a stored row or on the body's own `type`, so the
   * operation picks it (endpoints); `doc.body` then only documents the common shape.
   */
  bodyCheckedBy?: "operation";
  handle(ctx: OpsContext, call: Call<Record<string, unknown>, Record<string, unknown>>): Promise<void> | void;
};

/** Declares a route; `params` and `query` reach the handler typed by the doc's schemas. */
export function route<P extends z.ZodObject | undefined = undefined, Q extends z.ZodObject | undefined = undefined>(
  def: Omit<Route, "doc" | "handle"> & {
    doc: RouteDoc & { params?: P; query?: Q };
    handle(ctx: OpsContext, call: Call<Out<P>, Out<Q>>): Promise<void> | void;
  },
): Route {
  return def as unknown as Route;
}

/** The route's schemas checked in order (path, query, body); the first problem is a 400 naming the field. */
function validated(
  r: Route,
  req: Request,
): Pick<Call<Record<string, unknown>, Record<string, unknown>>, "params" | "query"> {
  const { params, query, body } = r.doc;
  const checked = {
    params: params ? parse(params, req.params, "path") : req.params,
    query: query ? parse(query, req.query, "query") : req.query,
  };
  if (body && r.bodyCheckedBy !== "operation") {
    if (r.messages === "rules") parseRuleInput(body, req.body);
    else parse(body, req.body);
  }
  return checked;
}

/** The express handler of one route: validate, then run it (a rejection reaches the error handler). */
export function handlerOf(ctx: OpsContext, r: Route): RequestHandler {
  return async (req, res) => {
    await r.handle(ctx, { req, res, ...validated(r, req) });
  };
}

/** Registers `routes` on `router`, each validating its request before its handler runs. */
export function mountRoutes(router: Router, ctx: OpsContext, routes: readonly Route[]): Router {
  for (const r of routes) router[r.method.toLowerCase() as Lowercase<Method>](r.path, handlerOf(ctx, r));
  return router;
}

/** `/emails/:id` → a matcher for concrete request paths. */
export function pathMatcher(path: string): RegExp {
  const body = path
    .split("/")
    .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${body}/?$`);
}

/** A route as the app serves it, full path included: what the 405s, OPTIONS, docs and access log read. */
export type RegisteredRoute = { method: string; path: string; doc: RouteDoc | undefined };

export const servedAt = (prefix: string, routes: readonly Pick<Route, "method" | "path">[]): RegisteredRoute[] =>
  routes.map((r) => ({
    method: r.method,
    path: r.path === "/" ? prefix || "/" : `${prefix}${r.path}`,
    doc: "doc" in r ? (r.doc as RouteDoc) : undefined,
  }));

/** Remembers on the app what it serves (createApp), for the tests that walk every route. */
export function recordRoutes(app: { locals: Record<string, unknown> }, routes: readonly RegisteredRoute[]): void {
  app.locals.routes = routes;
}

/** Every route `app` serves, in registration order. */
export const registeredRoutes = (app: { locals: Record<string, unknown> }): RegisteredRoute[] => [
  ...((app.locals.routes as readonly RegisteredRoute[] | undefined) ?? []),
];

/** The methods some route allows on `path`; HEAD wherever GET is. Empty when no route matches. */
export function allowedMethods(routes: readonly RegisteredRoute[], path: string): string[] {
  const set = new Set<string>();
  for (const r of routes) {
    if (pathMatcher(r.path).test(path)) {
      set.add(r.method);
      if (r.method === "GET") set.add("HEAD");
    }
  }
  return [...set].sort();
}
