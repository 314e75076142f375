import { smtpError } from "./enhanced-codes.ts";

/**
 * The MAIL FROM / RCPT TO parameters this server implements, matching what server.ts makes
 * smtp-server advertise: SIZE (RFC 1870), BODY (8BITMIME, RFC 6152), SMTPUTF8 (RFC 6531) and
 * REQUIRETLS (RFC 8689, offered once TLS is up; smtp-server checks it). DSN is hidden and AUTH is
 * not offered, so RET, ENVID, NOTIFY, ORCPT and AUTH= are unknown here, and RCPT takes none.
 * smtp-server validates the known ones and silently keeps any other; RFC 5321 §4.1.1.11 wants
 * `555 5.5.4` for a parameter that is not recognized.
 */
const known = {
  MAIL: new Set(["SIZE", "BODY", "SMTPUTF8", "REQUIRETLS"]),
  RCPT: new Set<string>(),
} as const;

/** `555 5.5.4` for the first parameter not implemented, or null. */
export function unknownParameter(command: keyof typeof known, args: unknown): Error | null {
  if (!args || typeof args !== "object") return null;
  const bad = Object.keys(args).find((k) => !known[command].has(k.toUpperCase()));
  if (bad === undefined) return null;
  const name = bad.replace(/[^\x21-\x7e]/g, "?").slice(0, 64);
  return smtpError(555, "5.5.4", `${command === "MAIL" ? "MAIL FROM" : "RCPT TO"} parameter ${name} not implemented`);
}
