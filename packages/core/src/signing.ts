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
