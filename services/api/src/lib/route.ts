import type { Request, RequestHandler, Response, Router } from "express";
import type { z } from "zod";
import type { OpsContext } from "../ops/context.ts";
import { accountOf, parse, parseRuleInput } from "./http.ts";

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

/**
 * One request as a handler sees it: the caller's account, and params, query and body already
 * validated by the route's schemas (a body the operation checks itself stays `unknown`).
 */
export type Call<P, Q, B = unknown> = { req: Request; res: Response; account: string; params: P; query: Q; body: B };

type Out<S> = S extends z.ZodType ? z.output<S> : Record<string, string>;
type BodyOut<S> = S extends z.ZodType ? z.output<S> : undefined;
type AnyCall = Call<Record<string, unknown>, Record<string, unknown>, unknown>;

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
   * `operation`: the operation's own parser checks the body, because the schema depends on a stored
   * row (`PATCH /endpoints/{id}`) or each kind of a union words its own problems (`POST /endpoints`);
   * `doc.body` then only documents, and the handler passes the body to that parser.
   */
  bodyCheckedBy?: "operation";
  /**
   * `itself`: the handler writes the response (raw bytes, a stream, replayed idempotent answers).
   * Otherwise what it returns is sent as JSON with the route's one documented success status
   * (`doc.responses`), and a 204 with no body.
   */
  sends?: "itself";
  handle(ctx: OpsContext, call: AnyCall): unknown;
};

type Def<P, Q, B> = Omit<Route, "doc" | "handle" | "sends" | "bodyCheckedBy"> & {
  doc: RouteDoc & { params?: P; query?: Q; body?: B };
};

/**
 * Declares a route: the handler gets the account and the validated params, query and body, typed
 * by the doc's schemas, and returns what the route answers with its declared status; or, with
 * `sends: "itself"`, writes the response itself.
 */
export function route<
  P extends z.ZodObject | undefined = undefined,
  Q extends z.ZodObject | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(
  def: Def<P, Q, B> &
    (
      | {
          sends?: undefined;
          bodyCheckedBy?: undefined;
          handle(ctx: OpsContext, call: Call<Out<P>, Out<Q>, BodyOut<B>>): unknown;
        }
      | {
          sends: "itself";
          bodyCheckedBy?: undefined;
          handle(ctx: OpsContext, call: Call<Out<P>, Out<Q>, BodyOut<B>>): unknown;
        }
      | {
          sends?: "itself";
          bodyCheckedBy: "operation";
          handle(ctx: OpsContext, call: Call<Out<P>, Out<Q>, unknown>): unknown;
        }
    ),
): Route {
  return def as unknown as Route;
}

/** The one success status a route declares in its doc (the status its handler's result is sent with). */
export function successStatus(doc: RouteDoc): number {
  const ok = Object.keys(doc.responses)
    .map(Number)
    .filter((s) => s >= 200 && s < 300);
  if (ok.length !== 1) throw new Error(`${doc.summary}: declare exactly one success status (got ${ok.join(", ")})`);
  return ok[0] as number;
}

/** The route's schemas checked in order (path, query, body); the first problem is a 400 naming the field. */
function validated(r: Route, req: Request): Pick<AnyCall, "params" | "query" | "body"> {
  const { params, query, body } = r.doc;
  const checked = {
    params: params ? parse(params, req.params, "path") : req.params,
    query: query ? parse(query, req.query, "query") : req.query,
  };
  if (!body || r.bodyCheckedBy === "operation") return { ...checked, body: req.body };
  return { ...checked, body: r.messages === "rules" ? parseRuleInput(body, req.body) : parse(body, req.body) };
}

/** The express handler of one route: validate, run it, answer (a rejection reaches the error handler). */
export function handlerOf(ctx: OpsContext, r: Route): RequestHandler {
  const status = r.sends === "itself" ? 0 : successStatus(r.doc);
  return async (req, res) => {
    const input = validated(r, req);
    const account = r.doc.public ? "" : accountOf(req);
    const result = await r.handle(ctx, { req, res, account, ...input });
    if (r.sends === "itself") return;
    if (status === 204) res.status(204).end();
    else res.status(status).json(result);
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
