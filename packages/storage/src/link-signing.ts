import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Signed, expiring attachment links the API serves itself (BYTE_STORE=postgres, where there is no
 * object store to presign for): `<PUBLIC_API_URL>/files/emails/<id>/attachments/<n>?expires=<unix s>
 * &signature=<hex HMAC-SHA256>`. The dispatcher signs with SIGNED_URL_SECRET, the API checks with
 * the same secret; the link names one attachment and is refused after `expires`.
 */
const payload = (emailId: string, index: number, expires: number) => `attachment\n${emailId}\n${index}\n${expires}`;
const mac = (secret: string, emailId: string, index: number, expires: number) =>
  createHmac("sha256", secret)
    .update(payload(emailId, index, expires))
    .digest();

export const SIGNED_LINK_PATH = "/files/emails/:id/attachments/:n";

export function signAttachmentLink(
  opts: { publicApiUrl: string; secret: string },
  emailId: string,
  index: number,
  expiresAt: Date,
): string {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  const signature = mac(opts.secret, emailId, index, expires).toString("hex");
  const base = opts.publicApiUrl.replace(/\/$/, "");
  return `${base}/files/emails/${encodeURIComponent(emailId)}/attachments/${index}?expires=${expires}&signature=${signature}`;
}

/** `ok` only for an unexpired link whose signature matches this email and attachment. */
export function checkAttachmentLink(
  secret: string,
  emailId: string,
  index: number,
  query: { expires?: unknown; signature?: unknown },
  now: Date,
): { ok: true } | { ok: false; reason: "malformed" | "expired" | "bad signature" } {
  const expires = typeof query.expires === "string" && /^\d{1,12}$/.test(query.expires) ? Number(query.expires) : null;
  const given =
    typeof query.signature === "string" && /^[0-9a-f]{64}$/.test(query.signature)
      ? Buffer.from(query.signature, "hex")
      : null;
  if (expires === null || !given) return { ok: false, reason: "malformed" };
  // Signature first, so an expired link with a forged signature is not told apart from a forged one.
  if (!timingSafeEqual(given, mac(secret, emailId, index, expires))) return { ok: false, reason: "bad signature" };
  if (now.getTime() >= expires * 1000) return { ok: false, reason: "expired" };
  return { ok: true };
}
