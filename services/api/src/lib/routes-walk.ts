import type { Express } from "express";
import { docOf, type RouteDoc } from "./route.ts";

/** One method on one path, as registered on the express app. */
export type RegisteredRoute = { method: string; path: string; doc: RouteDoc | undefined };

type Layer = {
  rawPath?: unknown;
  handle?: { stack?: Layer[] };
  route?: { path: unknown; methods: Record<string, boolean>; stack: { handle: unknown; method?: string }[] };
};

const joinPath = (base: string, path: string) => (path === "/" ? base || "/" : `${base}${path}`);

/**
 * Every route the app serves, found by walking express's own router stack (routers mounted with
 * `use`, nested), so nothing registered can be missing from what the OpenAPI document covers.
 */
export function registeredRoutes(app: Express): RegisteredRoute[] {
  const out: RegisteredRoute[] = [];
  const walk = (stack: Layer[], base: string) => {
    for (const layer of stack) {
      if (layer.route) {
        if (typeof layer.route.path !== "string") continue;
        const path = joinPath(base, layer.route.path);
        for (const method of Object.keys(layer.route.methods)) {
          if (method === "_all") continue;
          const handlers = layer.route.stack.filter((l) => !l.method || l.method === method).map((l) => l.handle);
          out.push({ method: method.toUpperCase(), path, doc: handlers.map(docOf).find(Boolean) });
        }
      } else if (layer.handle?.stack && typeof layer.rawPath === "string") {
        walk(layer.handle.stack, layer.rawPath === "/" ? base : `${base}${layer.rawPath}`);
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, "");
  return out;
}

/** `/emails/:id` → a matcher for concrete request paths. */
export function pathMatcher(path: string): RegExp {
  const body = path
    .split("/")
    .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${body}/?$`);
}

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
