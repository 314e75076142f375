import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Stripe-compatible webhook signatures: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
 * During a secret rotation both secrets sign, giving two `v1=` entries; verifiers accept either.
 */
export function signatureHeader(secrets: readonly string[], body: string | Buffer, timestamp: number): string {
  const t = Math.floor(timestamp);
  const parts = secrets.map((s) => `v1=${hmac(s, t, body)}`);
  return [`t=${t}`, ...parts].join(",");
}

function hmac(secret: string, t: number, body: string | Buffer): string {
  return createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");
}

export type VerifyResult = { ok: true; timestamp: number } | { ok: false; reason: string };

/** What a receiver does; used by our own tests and the documentation's example. */
export function verifySignature(
  secret: string,
  header: string,
  body: string | Buffer,
  { toleranceSeconds = 300, now = Date.now() } = {},
): VerifyResult {
  const items = header.split(",").map((p) => p.split("=", 2) as [string, string | undefined]);
  const t = Number(items.find(([k]) => k === "t")?.[1]);
  if (!Number.isInteger(t)) return { ok: false, reason: "no timestamp" };
  if (Math.abs(now / 1000 - t) > toleranceSeconds) return { ok: false, reason: "timestamp outside tolerance" };
  const expected = Buffer.from(hmac(secret, t, body));
  const match = items.some(([k, v]) => {
    if (k !== "v1" || !v) return false;
    const given = Buffer.from(v);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return match ? { ok: true, timestamp: t } : { ok: false, reason: "no matching v1 signature" };
}

/**
 * Standard Webhooks (standardwebhooks.com) headers for the same body, signed with the same stored
 * secret(s). The spec's key is the secret minus its `whsec_` prefix, base64-decoded; our secrets
 * are `whsec_` + 40 base62 characters, which is valid base64 (30 bytes), so one stored secret
 * serves both schemes: Stripe-style receivers use the whole string as the HMAC key, Standard
 * Webhooks receivers the decoded bytes. During a rotation both secrets sign: two space-separated
 * `v1,` entries, which the spec's verifiers accept either of.
 */
export function standardWebhookHeaders(
  messageId: string,
  secrets: readonly string[],
  body: string | Buffer,
  timestamp: number,
): { "webhook-id": string; "webhook-timestamp": string; "webhook-signature": string } {
  const t = Math.floor(timestamp);
  const signatures = secrets.map((s) => `v1,${standardSignature(s, messageId, t, body)}`);
  return { "webhook-id": messageId, "webhook-timestamp": String(t), "webhook-signature": signatures.join(" ") };
}

/** The HMAC key Standard Webhooks derives from a `whsec_…` secret. */
export function standardWebhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
}

function standardSignature(secret: string, messageId: string, t: number, body: string | Buffer): string {
  return createHmac("sha256", standardWebhookKey(secret)).update(`${messageId}.${t}.`).update(body).digest("base64");
}

/** A receiver's check of the Standard Webhooks headers (the client's `verifyWebhook` mirrors it). */
export function verifyStandardWebhook(
  secret: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string | Buffer,
  { toleranceSeconds = 300, now = Date.now() } = {},
): VerifyResult {
  const t = Number(headers.timestamp);
  if (!Number.isInteger(t)) return { ok: false, reason: "no timestamp" };
  if (Math.abs(now / 1000 - t) > toleranceSeconds) return { ok: false, reason: "timestamp outside tolerance" };
  const expected = Buffer.from(standardSignature(secret, headers.id, t, body));
  const match = headers.signature.split(" ").some((entry) => {
    const [version, sig] = entry.split(",", 2);
    if (version !== "v1" || !sig) return false;
    const given = Buffer.from(sig);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return match ? { ok: true, timestamp: t } : { ok: false, reason: "no matching v1 signature" };
}
