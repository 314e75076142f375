import type { DOMPurify } from "dompurify";

/**
 * The sanitizing half of mail-html.ts, run in a worker thread (piscina): DOMPurify on jsdom, the
 * rules explained there. Parsing a large or hostile HTML part takes long enough to stall every other
 * request if it ran on the API's event loop, so it never does.
 */

/** What the hook touches of an element (this file compiles without the DOM library). */
type Attributes = { getAttribute(name: string): string | null; removeAttribute(name: string): void };

export type SanitizeTask = { html: string; remoteImages: boolean };
export type SanitizedHtml = { html: string; blockedImages: number };

const FORBID_TAGS = [
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "link",
  "meta",
  "base",
  "video",
  "audio",
  "source",
  "track",
  "portal",
  "fencedframe",
  "noscript",
];
/** `ping` reports clicks; the others load resources or submit. */
const FORBID_ATTR = ["ping", "action", "formaction", "lowsrc", "dynsrc", "longdesc"];
/** Attributes whose value makes the browser fetch an image. */
const IMAGE_ATTRS = ["src", "srcset", "background", "poster"];

let purifier: Promise<DOMPurify> | undefined;

function loadPurifier(): Promise<DOMPurify> {
  purifier ??= Promise.all([import("jsdom"), import("dompurify")]).then(([{ JSDOM }, { default: createDOMPurify }]) =>
    createDOMPurify(new JSDOM("").window as unknown as Parameters<typeof createDOMPurify>[0]),
  );
  return purifier;
}

const isRemoteHttp = (value: string) => /^\s*https?:\/\//i.test(value);
const isInline = (value: string) => /^\s*data:/i.test(value);

/**
 * With remote images allowed, only absolute http(s) and data: image URLs are kept (a relative URL
 * would point at this API); without, only data: ones. `blocked` counts what was taken out.
 */
function keepImageUrl(value: string, remote: boolean): boolean {
  if (isInline(value)) return true;
  return remote && isRemoteHttp(value);
}

function srcsetKept(value: string, remote: boolean): boolean {
  return value
    .split(",")
    .map((candidate) => candidate.trim().split(/\s+/, 1)[0] ?? "")
    .every((url) => url === "" || keepImageUrl(url, remote));
}

/** The mail's HTML with everything that could fetch, run or submit removed (see above). */
export async function sanitizeMailHtml(dirty: string, opts: { remoteImages: boolean }): Promise<SanitizedHtml> {
  const purify = await loadPurifier();
  let blockedImages = 0;
  purify.addHook("afterSanitizeAttributes", (node) => {
    const el = node as unknown as Attributes;
    for (const name of IMAGE_ATTRS) {
      const value = el.getAttribute(name);
      if (value === null) continue;
      const kept = name === "srcset" ? srcsetKept(value, opts.remoteImages) : keepImageUrl(value, opts.remoteImages);
      if (!kept) {
        el.removeAttribute(name);
        blockedImages++;
      }
    }
  });
  try {
    // FORCE_BODY keeps the `<style>` elements of the mail's <head>, which is where most mail puts them.
    const html = purify.sanitize(dirty, {
      USE_PROFILES: { html: true },
      FORBID_TAGS,
      FORBID_ATTR,
      FORCE_BODY: true,
    });
    return { html, blockedImages };
  } finally {
    purify.removeHook("afterSanitizeAttributes");
  }
}

/** The worker's entry (piscina calls the default export with each task). */
export default (task: SanitizeTask): Promise<SanitizedHtml> =>
  sanitizeMailHtml(task.html, { remoteImages: task.remoteImages });
