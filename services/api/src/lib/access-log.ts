import type { Logger } from "@mailroom/log";
import { Counter, Histogram, LATENCY_BUCKETS, type Registry } from "@mailroom/observability";
import type { RequestHandler } from "express";
import { pathMatcher, type RegisteredRoute } from "./route.ts";

/** Probes hit these every few seconds: counted in metrics, kept out of the access log. */
const PROBES = new Set(["/healthz", "/readyz"]);

/**
 * The route template a request matched (`/api/v1/emails/:id`), never the raw path: ids in metric
 * labels would make a new series per email. A path no route serves is `unmatched`.
 */
export function routeTemplates(routes: readonly RegisteredRoute[]): (method: string, path: string) => string {
  const compiled = routes.map((r) => ({ method: r.method, path: r.path, re: pathMatcher(r.path) }));
  return (method, path) => {
    const wanted = method === "HEAD" ? "GET" : method;
    const same = compiled.find((r) => r.method === wanted && r.re.test(path));
    return (same ?? compiled.find((r) => r.re.test(path)))?.path ?? "unmatched";
  };
}

/**
 * One access-log line per API request (request id, method, route, path without its query string,
 * status, duration, account) and the request metrics, both when the response is done.
 */
export function accessLog(
  logger: Logger,
  registry: Registry | undefined,
  templateOf: (method: string, path: string) => string,
): RequestHandler {
  const requests = registry
    ? new Counter({
        name: "mailroom_http_requests_total",
        help: "API requests by method, route template and status",
        labelNames: ["method", "route", "status"],
        registers: [registry],
      })
    : null;
  const duration = registry
    ? new Histogram({
        name: "mailroom_http_request_duration_seconds",
        help: "API request duration by method and route template",
        labelNames: ["method", "route"],
        buckets: LATENCY_BUCKETS,
        registers: [registry],
      })
    : null;
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const path = req.path;
    res.once("close", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = templateOf(req.method, path);
      // A client that went away before the response was complete: nginx's 499.
      const status = res.writableFinished ? res.statusCode : 499;
      requests?.inc({ method: req.method, route, status: String(status) });
      duration?.observe({ method: req.method, route }, seconds);
      if (PROBES.has(path)) return;
      logger.info(
        {
          requestId: res.getHeader("X-Request-Id"),
          method: req.method,
          route,
          path,
          status,
          durationMs: Math.round(seconds * 1000),
          accountId: req.auth?.accountId,
        },
        `${req.method} ${path} ${status}`,
      );
    });
    next();
  };
}
