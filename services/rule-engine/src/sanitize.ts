/**
 * What the engine writes to Postgres must be text Postgres can hold. Decoded mail can hold what it
 * cannot: U+0000 (refused in text, varchar, text[] and jsonb: error 22021 / 22P05) and lone UTF-16
 * surrogates (refused in jsonb as `\udXXX` escapes; in text they would silently become U+FFFD on
 * the way to UTF-8). Both come from perfectly valid 7-bit mail: `=?utf-8?B?YQBi?=`,
 * quoted-printable `=00`, base64 text, UTF-16/UTF-32 parts, filenames, display names.
 *
 * Each such character is replaced with U+FFFD rather than dropped: the text keeps its length and
 * word boundaries (dropping would turn `a\0b` into `ab`, which a shield rule could then match when
 * the sender meant otherwise), and U+FFFD is what every decoder already shows for "a character was
 * here that could not be represented". The raw message is never touched, so nothing is lost: it
 * stays byte-identical behind GET /emails/{id}/raw, and the Email row lists which fields were
 * cleaned (`sanitized`).
 */

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** The string as Postgres can store it (unchanged, the same string, when it already can). */
export function pgSafeText(s: string): string {
  // String.prototype.toWellFormed is ES2024; the project's lib is ES2023.
  const wellFormed = s.replace(LONE_SURROGATE, "\uFFFD");
  return wellFormed.includes("\u0000") ? wellFormed.replaceAll("\u0000", "\uFFFD") : wellFormed;
}

type Cleaned<T> = { value: T; sanitized: string[] };

/**
 * Cleans every string anywhere inside `value` (objects, arrays; byte arrays are left alone) and
 * reports the fields where something was replaced, as paths without indexes (`subject`,
 * `headers.value`, `attachments.filename`), each once, in the order met.
 */
export function sanitizeForPostgres<T>(value: T): Cleaned<T> {
  const found = new Set<string>();
  const walk = (v: unknown, path: string): unknown => {
    if (typeof v === "string") {
      const clean = pgSafeText(v);
      if (clean !== v) found.add(path || "(value)");
      return clean;
    }
    if (v === null || typeof v !== "object" || ArrayBuffer.isView(v) || v instanceof Date) return v;
    if (Array.isArray(v)) return v.map((item) => walk(item, path));
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(v)) out[k] = walk(item, path ? `${path}.${k}` : k);
    return out;
  };
  const clean = walk(value, "") as T;
  return { value: clean, sanitized: [...found] };
}
