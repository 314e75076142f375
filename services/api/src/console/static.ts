import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import express, { type RequestHandler, Router } from "express";

/**
 * Where `npm run console:build` (and `npm run build`) put the bundle: services/api/console/dist,
 * the same relative place from src/ in a checkout and from dist/'s compiled src/.
 */
export const defaultConsoleDir = (): string => join(fileURLToPath(new URL("../../console/dist", import.meta.url)));

/**
 * Everything the console loads comes from this origin (the bundle has no third-party URLs, and the
 * policy makes sure); it may not be framed (clickjacking); HTML in mail is shown elsewhere, in a
 * sandboxed iframe of its own.
 */
const securityHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader(
    "Content-Security-Policy",
    "default-src 'self'; img-src 'self' data:; style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  );
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("X-Frame-Options", "DENY");
  next();
};

/** /console: the built single-page app; any other path under it gets index.html (client-side routes). */
export function consoleStatic(dir: string): Router {
  const r = Router();
  r.use(securityHeaders);
  const index = join(dir, "index.html");
  // Hashed asset names never change content: cache them for a year; index.html is always revalidated.
  r.use("/assets", express.static(join(dir, "assets"), { immutable: true, maxAge: "365d" }));
  // An asset that is not in this build (an old tab after a deploy, a probe): 404, never the app.
  r.use("/assets", (req, res) => {
    res.status(404).type("text/plain").send(`No console asset ${req.path}\n`);
  });
  r.use(express.static(dir, { index: false }));
  r.get(/.*/, (_req, res) => {
    if (!existsSync(index)) {
      res
        .status(503)
        .type("text/plain")
        .send("The console is not built. Run `npm run console:build` (scripts/run.sh does) and reload.\n");
      return;
    }
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(index);
  });
  return r;
}
