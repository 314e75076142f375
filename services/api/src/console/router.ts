import { AppError } from "@mailroom/core";
import type { Redis } from "@mailroom/queues";
import { type Request, type RequestHandler, type Response, Router } from "express";
import { addressGroup, type ProxyTrust } from "../lib/client-address.ts";
import { accountOf } from "../lib/http.ts";
import { jsonBody } from "../lib/json-body.ts";
import { type RateLimitConfig, rateLimitMiddleware } from "../lib/rate-limit.ts";
import { type Method, mountRoutes, type Route, route } from "../lib/route.ts";
import { refuseUnstorableText } from "../lib/storable-text.ts";
import { createKey, createKeyBody, listKeys, revokeKey } from "../ops/api-keys.ts";
import type { OpsContext } from "../ops/context.ts";
import { getEmail } from "../ops/emails.ts";
import { inviteBody, inviteMember, listMembersOf, removeMemberOf } from "../ops/members.ts";
import { getOverview } from "../ops/overview.ts";
import { v1Router } from "../routes/v1.ts";
import { clearSessionCookie, setSessionCookie } from "./cookies.ts";
import { consoleSession, requireCsrf, requireJsonSameOrigin } from "./guards.ts";
import { type SignInThrottle, signInThrottle } from "./ip-throttle.ts";
import { type MailSanitizer, mailFrameDocument, mailFramePolicy, notShownDocument } from "./mail-html.ts";
import { createSession, csrfTokenOf, endSession } from "./sessions.ts";
import { checkCredentials, setPasswordWithToken } from "./sign-in.ts";

export type ConsoleDeps = {
  ctx: OpsContext;
  redis: Redis;
  bodyLimit: string;
  rateLimit: RateLimitConfig;
  /** Which peers may name the client's address and protocol (X-Forwarded-For/-Proto). */
  proxies: ProxyTrust;
  /** Sanitizes mail HTML for the message view's frame. */
  mailHtml: MailSanitizer;
};

type Env = ConsoleDeps & { throttle: SignInThrottle };

/** One of the console's own routes (session, overview, API keys); below them the /api/v1 table is mounted. */
type ConsoleRoute = {
  method: Method;
  path: string;
  handle(env: Env, req: Request, res: Response): Promise<void> | void;
};

/** Sign-in and set-password: the only routes served without a session. */
const anonymousRoutes: ConsoleRoute[] = [
  {
    method: "POST",
    path: "/session",
    handle: async ({ ctx, throttle, proxies }, req, res) => {
      const ip = addressGroup(proxies.clientAddress(req));
      await throttle.check(ip);
      const member = await checkCredentials(ctx.prisma, req.body, ip).catch(async (err: unknown) => {
        // Wrong credentials and attempts on a locked member count against the address; a 400 does not.
        if (err instanceof AppError && (err.code === "unauthorized" || err.code === "rate_limited")) {
          await throttle.failed(ip);
        }
        throw err;
      });
      const token = await createSession(ctx.prisma, member.id);
      setSessionCookie(req, res, token, proxies);
      res.status(201).json({ email: member.email, accountId: member.accountId, csrfToken: csrfTokenOf(token) });
    },
  },
  {
    method: "POST",
    path: "/password",
    handle: async ({ ctx }, req, res) => {
      res.json(await setPasswordWithToken(ctx.prisma, req.body));
    },
  },
];

/** The signed-in member's own routes (every write also needs the CSRF token). */
const memberRoutes: ConsoleRoute[] = [
  {
    method: "GET",
    path: "/session",
    handle: (_env, req, res) => {
      res.json({
        email: req.member?.email,
        accountId: req.member?.accountId,
        csrfToken: csrfTokenOf(req.sessionToken ?? ""),
      });
    },
  },
  {
    method: "DELETE",
    path: "/session",
    handle: async ({ ctx, proxies }, req, res) => {
      if (req.member) await endSession(ctx.prisma, req.member.sessionId);
      clearSessionCookie(req, res, proxies);
      res.status(204).end();
    },
  },
  {
    // The message view's frame: the sanitized HTML part as a document of its own (mail-html.ts).
    method: "GET",
    path: "/emails/:id/html",
    handle: async ({ ctx, mailHtml }, req, res) => {
      const email = await getEmail(ctx, accountOf(req), String(req.params.id));
      const remoteImages = req.query.images === "remote";
      const clean = await mailHtml.sanitize(email.htmlBody, { remoteImages });
      res.setHeader("Content-Security-Policy", mailFramePolicy(remoteImages));
      res.setHeader("X-Frame-Options", "SAMEORIGIN");
      res.setHeader("Referrer-Policy", "no-referrer");
      res.setHeader("X-Content-Type-Options", "nosniff");
      res.type("html").send(typeof clean === "string" ? notShownDocument(clean) : mailFrameDocument(clean.html));
    },
  },
];

const tag = "Console";
const deleted = { 204: { description: "Deleted" } };

/**
 * The member's account: declared as the REST routes are (account, validated body, declared status),
 * but served only here and left out of the OpenAPI document.
 */
const accountRoutes: Route[] = [
  route({
    method: "GET",
    path: "/overview",
    doc: { tag, summary: "The account, its usage and today's mail", responses: { 200: { description: "Overview" } } },
    handle: (ctx, { account }) => getOverview(ctx, account),
  }),
  route({
    method: "GET",
    path: "/api-keys",
    doc: { tag, summary: "The account's API keys", responses: { 200: { description: "Keys, without secrets" } } },
    handle: (ctx, { account }) => listKeys(ctx, account),
  }),
  route({
    method: "POST",
    path: "/api-keys",
    doc: { tag, summary: "New API key", body: createKeyBody, responses: { 201: { description: "Key, secret once" } } },
    handle: (ctx, { account, body }) => createKey(ctx, account, body),
  }),
  route({
    method: "DELETE",
    path: "/api-keys/:id",
    doc: { tag, summary: "Revoke an API key", responses: { 200: { description: "The revoked key" } } },
    handle: (ctx, { account, params }) => revokeKey(ctx, account, String(params.id)),
  }),
  route({
    method: "GET",
    path: "/members",
    doc: { tag, summary: "Members and open invitations", responses: { 200: { description: "Members" } } },
    handle: (ctx, { req, account }) => listMembersOf(ctx, account, req.member?.memberId),
  }),
  route({
    method: "POST",
    path: "/members",
    doc: { tag, summary: "Invite a member", body: inviteBody, responses: { 201: { description: "Invitation" } } },
    handle: (ctx, { account, body }) => inviteMember(ctx, account, body),
  }),
  route({
    method: "DELETE",
    path: "/members/:id",
    doc: { tag, summary: "Remove a member", responses: deleted },
    handle: (ctx, { account, params }) => removeMemberOf(ctx, account, String(params.id)),
  }),
];

/** The console's own routes, in the order they are registered (the /api/v1 table follows them). */
export const consoleOwnRoutes: readonly Pick<ConsoleRoute, "method" | "path">[] = [
  ...anonymousRoutes,
  ...memberRoutes,
  ...accountRoutes,
].map(({ method, path }) => ({ method, path }));

/** Sign-in and set-password bodies are a few hundred bytes; nothing bigger is read without a session. */
const ANONYMOUS_BODY_LIMIT = "16kb";

function mount(router: Router, env: Env, routes: readonly ConsoleRoute[], before: RequestHandler[] = []): Router {
  for (const r of routes) {
    router[r.method.toLowerCase() as Lowercase<Method>](r.path, ...before, (req, res) => r.handle(env, req, res));
  }
  return router;
}

/**
 * /console/api: the console's JSON API. Sign-in and set-password are the only anonymous routes
 * (and the only bodies read before a session is checked: small, JSON, same origin); everything else
 * needs the session cookie, and every write the CSRF token, before its body is parsed. Below the
 * console's own routes (session, overview, API keys) the very REST routes of /api/v1 are mounted,
 * so the console runs the same service layer with the member's account and no business rule
 * exists twice. Any other path is a JSON 404, never the web app's HTML.
 */
export function consoleApiRouter(deps: ConsoleDeps): Router {
  const env: Env = { ...deps, throttle: signInThrottle(deps.redis, deps.rateLimit.prefix, deps.ctx.logger) };
  const r = Router();
  mount(r, env, anonymousRoutes, [
    requireJsonSameOrigin,
    jsonBody({ limit: ANONYMOUS_BODY_LIMIT }),
    refuseUnstorableText,
  ]);
  r.use(
    consoleSession(deps.ctx.prisma),
    rateLimitMiddleware(deps.redis, deps.rateLimit, deps.ctx.logger),
    requireJsonSameOrigin,
    requireCsrf,
    jsonBody({ limit: deps.bodyLimit }),
    refuseUnstorableText,
  );
  mount(r, env, memberRoutes);
  mountRoutes(r, deps.ctx, accountRoutes);
  r.use(v1Router(deps.ctx));
  r.use((req, _res, next) => {
    next(new AppError("not_found", `No route for ${req.method} ${req.originalUrl.split("?", 1)[0]}`));
  });
  return r;
}
