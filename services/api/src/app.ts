import { randomUUID } from "node:crypto";
import { AppError } from "@mailroom/core";
import express, { type Express } from "express";
import type { Redis } from "ioredis";
import { authMiddleware } from "./lib/auth.ts";
import { errorHandler } from "./lib/http.ts";
import type { OpsContext } from "./ops/context.ts";
import { v1Router } from "./routes/v1.ts";

export type AppDeps = OpsContext & { redis: Redis; bodyLimit: string };

/** Builds the express app; main.ts only listens. Tests drive this same app over real HTTP. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", false);

  app.use((req, res, next) => {
    const id = req.header("x-request-id")?.slice(0, 100) || randomUUID();
    res.setHeader("X-Request-Id", id);
    next();
  });

  app.get("/healthz", (_req, res) => {
    res.json({ ok: true });
  });
  app.get("/readyz", async (_req, res) => {
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
  });

  // Authenticate before parsing, so an anonymous caller learns nothing but 401.
  app.use(
    "/api/v1",
    authMiddleware(deps.prisma),
    express.json({ limit: deps.bodyLimit, type: () => true }),
    v1Router(deps),
  );

  app.use((req, _res, next) => next(new AppError("not_found", `No route for ${req.method} ${req.path}`)));
  app.use(errorHandler(deps.logger));
  return app;
}
