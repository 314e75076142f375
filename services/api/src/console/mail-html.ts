import Piscina from "piscina";
import type { SanitizedHtml, SanitizeTask } from "./mail-html-worker.ts";

/**
 * The HTML part of a message as the console shows it: sanitized by DOMPurify (on jsdom, in a worker
 * thread: mail-html-worker.ts) and served as its own document with its own policy.
 *
 * Two layers, each enough on its own for what it covers:
 * - the sanitizer removes every element and attribute that makes a browser fetch something before
 *   (or regardless of) the policy: frames, objects, embeds, `<link>` (preload, prefetch,
 *   dns-prefetch, preconnect), `<meta>` (refresh), `<base>`, media (`<video>`, `<audio>`,
 *   `<source>`, `<track>`), SVG and MathML, scripts and event handlers; and, unless the reader chose
 *   to load remote images, every remote `src`, `srcset` and `background` (a remote image is a read
 *   receipt);
 * - the policy (`mailFramePolicy`) is a sandbox (no scripts, no forms, an opaque origin) that lets
 *   the mail's inline and `<style>` CSS apply and loads nothing from the network: CSS `url()`,
 *   `@import` and fonts are refused before any connection; remote images only when chosen.
 */

/** Larger HTML parts are not rendered (the .eml has them): the worker's time and memory stay bounded. */
export const MAX_RENDERED_HTML = 2 * 1024 * 1024;
/** A part that takes longer than this to sanitize is not shown, and the thread that tried is replaced. */
const SANITIZE_DEADLINE_MS = 20_000;

export type { SanitizedHtml };

export type MailSanitizer = {
  /** The sanitized part, or why it is not shown: over MAX_RENDERED_HTML, or past the deadline. */
  sanitize(html: string, opts: { remoteImages: boolean }): Promise<SanitizedHtml | "too-large" | "timed-out">;
  close(): Promise<void>;
};

// Beside this module: the .ts under tsx and jest, the .js in the compiled build (dist/).
const WORKER = new URL(`./mail-html-worker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url);

/**
 * One thread at most (a console reader opens one message at a time; more would only take cores from
 * the API), started on first use and stopped after a minute idle, so an API nobody reads mail on
 * never loads jsdom.
 */
export function createMailSanitizer(): MailSanitizer {
  let pool: Piscina<SanitizeTask, SanitizedHtml> | undefined;
  // A fresh thread first loads jsdom (seconds on a busy machine): that is not the part's time, so a
  // small task warms it, without a deadline, before any part's deadline starts.
  let warm: Promise<unknown> | undefined;
  const started = () => {
    if (!pool) {
      pool = new Piscina({ filename: WORKER.href, minThreads: 0, maxThreads: 1, idleTimeout: 60_000 });
      pool.on("workerDestroy", () => {
        warm = undefined;
      });
    }
    const p = pool;
    warm ??= p.run({ html: "", remoteImages: false }).catch((err: unknown) => {
      warm = undefined;
      throw err;
    });
    return warm.then(() => p);
  };
  return {
    async sanitize(html, { remoteImages }) {
      if (Buffer.byteLength(html) > MAX_RENDERED_HTML) return "too-large";
      const p = await started();
      try {
        return await p.run({ html, remoteImages }, { signal: AbortSignal.timeout(SANITIZE_DEADLINE_MS) });
      } catch (err) {
        if ((err as Error).name === "AbortError") return "timed-out";
        throw err;
      }
    },
    async close() {
      await pool?.destroy();
    },
  };
}

/**
 * The frame document's policy. `sandbox` makes the document an opaque origin without scripts even
 * when opened directly (not in the console's frame); only the console may frame it.
 */
export function mailFramePolicy(remoteImages: boolean): string {
  return [
    "sandbox",
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    `img-src data:${remoteImages ? " https: http:" : ""}`,
    "font-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'self'",
  ].join("; ");
}

/** The frame's whole document: the sanitized part in a body with readable defaults the mail's CSS may override. */
export function mailFrameDocument(sanitizedHtml: string): string {
  return [
    "<!doctype html>",
    '<html><head><meta charset="utf-8">',
    "<style>body{margin:8px;font-family:system-ui,sans-serif;overflow-wrap:anywhere}img{max-width:100%;height:auto}</style>",
    `</head><body>${sanitizedHtml}</body></html>`,
  ].join("");
}

/** What the frame shows instead of an HTML part that is too large, or took too long to make safe. */
export const notShownDocument = (why: "too-large" | "timed-out"): string =>
  mailFrameDocument(
    why === "too-large"
      ? "<p>This HTML part is too large to show here. Download the .eml to read it.</p>"
      : "<p>This HTML part could not be made safe to show in time. Reload to try again, or download the .eml.</p>",
  );
