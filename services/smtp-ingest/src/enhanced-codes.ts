import { SMTPConnection } from "smtp-server/lib/smtp-connection.js";

/**
 * smtp-server picks the enhanced status code from the reply code alone (550 → 5.1.1, 552 → 5.2.2),
 * but RFC 3463 wants the reason: 5.2.1 for a disabled mailbox, 5.3.4 for an oversized message. When
 * our reply text already starts with an enhanced code, tell smtp-server not to add its own.
 * (Patched once, on the prototype, because smtp-server offers no hook for this.)
 */
let patched = false;
export function useOwnEnhancedCodes(): void {
  if (patched) return;
  patched = true;
  type Send = (code: number, data?: unknown, context?: unknown) => void;
  const proto = SMTPConnection.prototype as unknown as { send: Send };
  const original = proto.send;
  proto.send = function (this: unknown, code: number, data?: unknown, context?: unknown) {
    const own = typeof data === "string" && /^[245]\.\d{1,3}\.\d{1,3} /.test(data);
    return original.call(this, code, data, own ? false : context);
  };
}

/** An error for an smtp-server callback: `<code> <enhanced> <message>` on the wire. */
export function smtpError(code: number, enhanced: string, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(`${enhanced} ${message}`), { responseCode: code });
}
