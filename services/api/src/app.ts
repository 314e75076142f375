import { randomUUID } from "node:crypto";
import { AppError } from "@mailroom/core";
import type { Registry } from "@mailroom/observability";
import type { Redis } from "@mailroom/queues";
import { SIGNED_LINK_PATH } from "@mailroom/storage";
import express, { type Express, type RequestHandler } from "express";
import { z } from "zod";
import { createMailSanitizer, type MailSanitizer } from "./console/mail-html.ts";
import { consoleApiRouter, consoleOwnRoutes } from "./console/router.ts";
import { consoleStatic, defaultConsoleDir } from "./console/static.ts";
import { accessLog, routeTemplates } from "./lib/access-log.ts";
import { authMiddleware } from "./lib/auth.ts";
import { proxyTrust } from "./lib/client-address.ts";
import { errorHandler } from "./lib/http.ts";
import { jsonBody } from "./lib/json-body.ts";
import { buildOpenApi } from "./lib/openapi.ts";
import { type RateLimitConfig, rateLimitMiddleware } from "./lib/rate-limit.ts";
import {
  allowedMethods,
  handlerOf,
  type RegisteredRoute,
  type Route,
  recordRoutes,
  route,
  servedAt,
} from "./lib/route.ts";
import { refuseUnstorableText } from "./lib/storable-text.ts";
import { mcpRouter } from "./mcp/http.ts";
import type { OpsContext } from "./ops/context.ts";
import { prefetchEmailList } from "./routes/emails.ts";
import { outboundBodyParser } from "./routes/outbound.ts";
import { signedFilesRouter } from "./routes/signed-files.ts";
import { v1Router, v1Routes } from "./routes/v1.ts";

export type AppDeps = OpsContext & {
  redis: Redis;
  bodyLimit: string;
  rateLimit?: RateLimitConfig;
  /** Request metrics go here (served on HEALTH_PORT); absent: only the access log. */
  registry?: Registry;
  /** True once shutdown began: /readyz answers 503 so the load balancer stops sending requests. */
  draining?: () => boolean;
  /**
   * The process's readiness, as the health port's /readyz reports it (started, not draining,
   * Postgres, Redis, the schema's migrations); absent: /readyz here pings Postgres and Redis itself.
   */
  ready?: () => Promise<{ ok: boolean }>;
  /**
   * Proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (API_TRUST_PROXY,
   * API_TRUSTED_PROXIES; lib/client-address.ts). Default: none.
   */
  trustedProxies?: readonly string[];
  /** Where the console's built bundle is (default: services/api/console/dist). */
  consoleDir?: string;
  /** SIGNED_URL_SECRET: serve the signed attachment links of webhook payloads (routes/signed-files.ts). */
  signedUrlSecret?: string;
  /** The console's mail HTML sanitizer (worker threads; the service closes it). Default: one of its own. */
  mailHtml?: MailSanitizer;
};

const API_VERSION = "1.0.0";
const API_PREFIX = "/api/v1";
const MCP_PATH = "/mcp";
const CONSOLE_API_PREFIX = "/console/api";
const DEFAULT_RATE_LIMIT: RateLimitConfig = { limit: 600, windowSeconds: 60, prefix: "mailroom" };

/** Builds the express app; main.ts only listens. Tests drive this same app over real HTTP. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", false);

  // Every /api/v1 route, from the route tables: the OpenAPI document, 405s and OPTIONS read it.
  const openApi = openApiDocument(() => apiRoutes);
  const apiRoutes = servedAt(API_PREFIX, [openApi, ...v1Routes]);
  const served = servedRoutes(deps, apiRoutes);
  recordRoutes(app, served);

  app.use(requestId);
  app.use(accessLog(deps.logger, deps.registry, routeTemplates(served)));
  app.get("/healthz", (_req, res) => {
    res.json({ ok: true });
  });
  app.get("/readyz", readiness(deps));
  // The contract is public, like any API's reference: no key needed to read it.
  app.get(`${API_PREFIX}${openApi.path}`, handlerOf(deps, openApi));
  // Signed attachment links carry their own authorisation (HMAC + expiry), so they come before the key check.
  if (deps.signedUrlSecret) app.use(signedFilesRouter(deps, deps.signedUrlSecret));
  mountInterfaces(app, deps, apiRoutes);

  app.use(notFoundOrMethodNotAllowed(apiRoutes));
  app.use(errorHandler(deps.logger));
  return app;
}

/** Everything the app serves, in registration order: the access log's route templates. */
function servedRoutes(deps: AppDeps, apiRoutes: RegisteredRoute[]): RegisteredRoute[] {
  const plain = (method: string, path: string): RegisteredRoute => ({ method, path, doc: undefined });
  return [
    plain("GET", "/healthz"),
    plain("GET", "/readyz"),
    ...apiRoutes.slice(0, 1),
    ...(deps.signedUrlSecret ? [plain("GET", SIGNED_LINK_PATH)] : []),
    ...apiRoutes.slice(1),
    plain("POST", MCP_PATH),
    ...servedAt(CONSOLE_API_PREFIX, [...consoleOwnRoutes, ...v1Routes]),
  ];
}

/** The caller's X-Request-Id when it is a plain token, else a fresh one; echoed on the response. */
const requestId: RequestHandler = (req, res, next) => {
  const given = req.header("x-request-id");
  const id = given && /^[\w.:-]{1,100}$/.test(given) ? given : randomUUID();
  res.setHeader("X-Request-Id", id);
  next();
};

/** 503 while draining or when Postgres or Redis does not answer, naming which. */
function readiness(deps: AppDeps): RequestHandler {
  return async (_req, res) => {
    if (deps.ready) {
      const report = await deps.ready();
      res.status(report.ok ? 200 : 503).json(report);
      return;
    }
    if (deps.draining?.()) {
      res.status(503).json({ ok: false, draining: true });
      return;
    }
    const [db, redis] = await Promise.all([
      deps.prisma.$queryRaw`SELECT 1`.then(
        () => "ok",
        (e: Error) => e.message,
      ),
      deps.redis.ping().then(
        () => "ok",
        (e: Error) => e.message,
      ),
    ]);
    const ok = db === "ok" && redis === "ok";
    res.status(ok ? 200 : 503).json({ ok, postgres: db, redis });
  };
}

/** GET /api/v1/openapi.json, built once on first request from the route tables. */
function openApiDocument(routes: () => RegisteredRoute[]): Route {
  let openapi: unknown;
  return route({
    method: "GET",
    path: "/openapi.json",
    doc: {
      tag: "Meta",
      summary: "This OpenAPI 3.1 document",
      public: true,
      responses: {
        200: {
          description: "OpenAPI 3.1 document",
          schema: z.looseObject({
            openapi: z.literal("3.1.0"),
            info: z.looseObject({ title: z.string(), version: z.string() }),
            paths: z.record(z.string(), z.unknown()),
          }),
        },
      },
    },
    handle: () => {
      openapi ??= buildOpenApi(routes(), { version: API_VERSION });
      return openapi;
    },
  });
}

/** The three ways in: the REST API, MCP for agents and the web console, each behind its own authentication. */
function mountInterfaces(app: Express, deps: AppDeps, apiRoutes: RegisteredRoute[]): void {
  // Authenticate before parsing, so an anonymous caller learns nothing but 401; then the per-key
  // rate limit, which also sets the RateLimit-* headers of every authenticated response.
  app.use([API_PREFIX, MCP_PATH, CONSOLE_API_PREFIX], noStore);
  app.use(
    API_PREFIX,
    authMiddleware(deps.prisma, prefetchEmailList(deps)),
    rateLimitMiddleware(deps.redis, deps.rateLimit ?? DEFAULT_RATE_LIMIT, deps.logger),
    answerOptions(apiRoutes),
    outboundBodyParser(),
    jsonBody({ limit: deps.bodyLimit, anyType: true }),
    refuseUnstorableText,
    v1Router(deps),
  );
  // MCP for agents: same keys, same per-key rate limit; scopes are checked per tool (spec §5.6).
  app.use(
    MCP_PATH,
    mcpRouter(deps, {
      bodyLimit: deps.bodyLimit,
      rateLimit: rateLimitMiddleware(deps.redis, deps.rateLimit ?? DEFAULT_RATE_LIMIT, deps.logger),
    }),
  );
  // The console (issue 17): its JSON API (session cookie + CSRF, same routers and ops as /api/v1)
  // and the built web app.
  app.use(
    CONSOLE_API_PREFIX,
    consoleApiRouter({
      ctx: deps,
      redis: deps.redis,
      bodyLimit: deps.bodyLimit,
      rateLimit: deps.rateLimit ?? DEFAULT_RATE_LIMIT,
      proxies: proxyTrust(deps.trustedProxies ?? []),
      mailHtml: deps.mailHtml ?? createMailSanitizer(),
    }),
  );
  app.use("/console", consoleStatic(deps.consoleDir ?? defaultConsoleDir()));
}

/**
 * Every answer of the three interfaces is the account's own data, and several carry a secret shown
 * once (a new API key, an endpoint's signing secret at creation or rotation, `create_inbox`'s new
 * endpoint, the console's CSRF token): no browser, proxy or CDN may keep a copy. Set on every
 * response rather than route by route, so a route added later that returns a secret is covered too.
 */
const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader("Cache-Control", "no-store");
  next();
};

/**
 * OPTIONS (a write for the scope check, spec §5.5, so it reaches here only with a full-access key):
 * 204 with `Allow` on a known path. Express would answer 200 with a text/plain method list, and a
 * success response of this API is JSON or empty. An unknown path falls through to 404.
 */
function answerOptions(routes: readonly RegisteredRoute[]): RequestHandler {
  return (req, res, next) => {
    if (req.method !== "OPTIONS") return next();
    const allow = allowedMethods(routes, `${req.baseUrl}${req.path}`);
    if (allow.length === 0) return next();
    res.setHeader("Allow", allow.join(", "));
    res.status(204).end();
  };
}

/** 405 with `Allow` when the path exists under another method, else 404. */
function notFoundOrMethodNotAllowed(routes: readonly RegisteredRoute[]): RequestHandler {
  return (req, res, next) => {
    const allow = allowedMethods(routes, req.path);
    if (allow.length > 0) {
      res.setHeader("Allow", allow.join(", "));
      return next(
        new AppError(
          "method_not_allowed",
          `Method ${req.method} is not allowed on ${req.path}; allowed: ${allow.join(", ")}`,
        ),
      );
    }
    next(new AppError("not_found", `No route for ${req.method} ${req.path}`));
  };
}
