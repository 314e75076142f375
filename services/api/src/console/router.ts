import { AppError } from "@mailroom/core";
import type { Redis } from "@mailroom/queues";
import express, { type RequestHandler, Router } from "express";
import { accountOf } from "../lib/http.ts";
import { type RateLimitConfig, rateLimitMiddleware } from "../lib/rate-limit.ts";
import { refuseUnstorableText } from "../lib/storable-text.ts";
import { createKey, listKeys, revokeKey } from "../ops/api-keys.ts";
import type { OpsContext } from "../ops/context.ts";
import { getOverview } from "../ops/overview.ts";
import { v1Router } from "../routes/v1.ts";
import { clearSessionCookie, setSessionCookie } from "./cookies.ts";
import { consoleSession, requireCsrf, requireJsonSameOrigin } from "./guards.ts";
import { clientIp, signInThrottle } from "./ip-throttle.ts";
import { createSession, csrfTokenOf, endSession } from "./sessions.ts";
import { checkCredentials, setPasswordWithToken } from "./sign-in.ts";

export type ConsoleDeps = {
  ctx: OpsContext;
  redis: Redis;
  bodyLimit: string;
  rateLimit: RateLimitConfig;
  /** X-Forwarded-Proto from the proxy in front counts as TLS (Secure cookies). */
  trustProxy: boolean;
};

/**
 * /console/api: the console's JSON API. Sign-in and set-password are the only anonymous routes;
 * everything else needs the session cookie, and every write the CSRF token. Below the console's own
 * routes (session, overview, API keys) the very REST routers of /api/v1 are mounted, so the console
 * runs the same service layer with the member's account and no business rule exists twice.
 */
export function consoleApiRouter(deps: ConsoleDeps): Router {
  const { ctx } = deps;
  const r = Router();
  r.use(express.json({ limit: deps.bodyLimit }), refuseUnstorableText);

  const anonymous = Router();
  const throttle = signInThrottle(deps.redis, deps.rateLimit.prefix, ctx.logger);
  anonymous.use(requireJsonSameOrigin);
  anonymous.post("/session", async (req, res) => {
    const ip = clientIp(req, deps.trustProxy);
    await throttle.check(ip);
    const member = await checkCredentials(ctx.prisma, req.body).catch(async (err: unknown) => {
      // Wrong credentials and attempts on a locked member count against the address; a 400 does not.
      if (err instanceof AppError && (err.code === "unauthorized" || err.code === "rate_limited")) {
        await throttle.failed(ip);
      }
      throw err;
    });
    const token = await createSession(ctx.prisma, member.id);
    setSessionCookie(req, res, token, deps.trustProxy);
    res.status(201).json({ email: member.email, accountId: member.accountId, csrfToken: csrfTokenOf(token) });
  });
  anonymous.post("/password", async (req, res) => {
    res.json(await setPasswordWithToken(ctx.prisma, req.body));
  });
  r.use(anonymous);

  r.use(
    consoleSession(ctx.prisma),
    rateLimitMiddleware(deps.redis, deps.rateLimit, ctx.logger),
    requireJsonSameOrigin,
    requireCsrf,
  );
  r.get("/session", (req, res) => {
    res.json({
      email: req.member?.email,
      accountId: req.member?.accountId,
      csrfToken: csrfTokenOf(req.sessionToken ?? ""),
    });
  });
  r.delete("/session", async (req, res) => {
    if (req.member) await endSession(ctx.prisma, req.member.sessionId);
    clearSessionCookie(req, res, deps.trustProxy);
    res.status(204).end();
  });
  r.get("/overview", async (req, res) => {
    res.json(await getOverview(ctx, accountOf(req)));
  });
  r.get("/api-keys", async (req, res) => {
    res.json(await listKeys(ctx, accountOf(req)));
  });
  r.post("/api-keys", async (req, res) => {
    res.status(201).json(await createKey(ctx, accountOf(req), req.body));
  });
  r.delete("/api-keys/:id", (async (req, res) => {
    res.json(await revokeKey(ctx, accountOf(req), String(req.params.id)));
  }) satisfies RequestHandler);
  r.use(v1Router(ctx));
  return r;
}
