import { createHmac, timingSafeEqual } from "node:crypto";
import type { EmailReceivedEvent } from "./generated/openapi.ts";

/**
 * Verification of mailroom's webhook deliveries. Every delivery is signed twice with the endpoint's
 * one secret (docs/webhooks.md): `X-Service-Signature` (Stripe's scheme: key = the whole `whsec_…`
 * string, hex HMAC-SHA256 of `<t>.<body>`) and the Standard Webhooks headers (key = the secret minus
 * `whsec_`, base64-decoded; base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`). Either scheme that
 * verifies is enough; a receiver behind a proxy that drops one set of headers still verifies.
 */

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

/** Fetch's `Headers`, or a plain object such as Node's `req.headers` (any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export type VerifyWebhookOptions = {
  /** Largest allowed distance between the signed timestamp and now, seconds (default 300). */
  toleranceSeconds?: number;
  /** "Now" in milliseconds since the epoch (default `Date.now()`). */
  now?: number;
};

type Check = { ok: true } | { ok: false; reason: string };

const headerOf = (headers: WebhookHeaders, name: string): string | undefined => {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v[0] : v;
  }
  return undefined;
};

const sameText = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

function timestampCheck(raw: string, opts: VerifyWebhookOptions): Check {
  const t = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(t)) return { ok: false, reason: "malformed timestamp" };
  const tolerance = opts.toleranceSeconds ?? 300;
  const now = (opts.now ?? Date.now()) / 1000;
  return Math.abs(now - t) > tolerance ? { ok: false, reason: "timestamp outside tolerance" } : { ok: true };
}

/** `X-Service-Signature: t=<unix>,v1=<hex>[,v1=<hex>]` (two `v1` during a secret rotation). */
function checkServiceSignature(header: string, body: Buffer, secret: string, opts: VerifyWebhookOptions): Check {
  const items = header.split(",").map((p) => p.trim().split("=", 2) as [string, string | undefined]);
  const t = items.find(([k]) => k === "t")?.[1];
  if (!t) return { ok: false, reason: "X-Service-Signature has no timestamp" };
  const time = timestampCheck(t, opts);
  if (!time.ok) return time;
  const expected = createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");
  const match = items.some(([k, v]) => k === "v1" && v !== undefined && sameText(v, expected));
  return match ? { ok: true } : { ok: false, reason: "no X-Service-Signature v1 entry matches" };
}

/** Standard Webhooks: `webhook-signature: v1,<base64>[ v1,<base64>]`. */
function checkStandardSignature(
  h: { id: string; timestamp: string; signature: string },
  body: Buffer,
  secret: string,
  opts: VerifyWebhookOptions,
): Check {
  const time = timestampCheck(h.timestamp, opts);
  if (!time.ok) return time;
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
  const expected = createHmac("sha256", key).update(`${h.id}.${h.timestamp}.`).update(body).digest("base64");
  const match = h.signature.split(" ").some((entry) => {
    const [version, sig] = entry.split(",", 2);
    return version === "v1" && sig !== undefined && sameText(sig, expected);
  });
  return match ? { ok: true } : { ok: false, reason: "no webhook-signature v1 entry matches" };
}

/**
 * Checks a delivery's signature against the endpoint's secret and returns the parsed event. Pass
 * the raw body exactly as received (re-serialized JSON does not verify). Throws
 * WebhookVerificationError when neither signature scheme's headers are present or none verifies.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  opts: VerifyWebhookOptions = {},
): EmailReceivedEvent {
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : Buffer.from(rawBody);
  const failures: string[] = [];
  const id = headerOf(headers, "webhook-id");
  const timestamp = headerOf(headers, "webhook-timestamp");
  const signature = headerOf(headers, "webhook-signature");
  // The legacy X-Inbound-Signature carries the same value as X-Service-Signature.
  const service = headerOf(headers, "x-service-signature") ?? headerOf(headers, "x-inbound-signature");
  const checks: (() => Check)[] = [];
  if (id && timestamp && signature)
    checks.push(() => checkStandardSignature({ id, timestamp, signature }, body, secret, opts));
  if (service) checks.push(() => checkServiceSignature(service, body, secret, opts));
  if (checks.length === 0) {
    throw new WebhookVerificationError(
      "no signature headers (webhook-id/-timestamp/-signature or X-Service-Signature)",
    );
  }
  for (const check of checks) {
    const r = check();
    if (r.ok) return parseEvent(body);
    failures.push(r.reason);
  }
  throw new WebhookVerificationError(failures.join("; "));
}

function parseEvent(body: Buffer): EmailReceivedEvent {
  try {
    return JSON.parse(body.toString("utf8")) as EmailReceivedEvent;
  } catch {
    throw new WebhookVerificationError("signed body is not JSON");
  }
}
