import { isIP } from "node:net";

/** The TLS session a message came in on (STARTTLS): negotiated protocol and OpenSSL cipher name. */
export type TlsInfo = { protocol: string; cipher: string };

/** What our trace header says about one accepted message (RFC 5321 §4.4). */
export type ReceivedFacts = {
  /** The HELO/EHLO argument as the client gave it (null if it gave none). */
  helo: string | null;
  /** Reverse DNS name of the client, when smtp-server resolved one. */
  reverseName: string | null;
  clientIp: string | null;
  /** Our name (SMTP_HOSTNAME). */
  by: string;
  /** The client opened with EHLO (ESMTP) rather than HELO (SMTP). */
  esmtp: boolean;
  tls: TlsInfo | null;
  spoolId: string;
  /** Named only when the message has exactly one recipient, as Postfix does (no other recipients leak). */
  recipients: readonly string[];
  at: Date;
};

/**
 * The `Received:` line we prepend to every accepted message, in Postfix's shape:
 *
 *   Received: from client.example (mail.client.example [192.0.2.7])
 *   	(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384)
 *   	by mx.example.com (mailroom) with ESMTPS id spl_…
 *   	for <user@example.com>; Tue, 26 Nov 2024 10:00:00 +0000
 *
 * Folded (CRLF + tab) so no line nears RFC 5322's 998; what the client sent (HELO, reverse name) is
 * cut to printable ASCII and 255 characters, so it can neither break the header nor forge a line.
 */
export function receivedHeader(f: ReceivedFacts): Buffer {
  const ip = f.clientIp ? addressLiteral(f.clientIp) : null;
  const client = ip ? `${f.reverseName ? printable(f.reverseName) : "unknown"} [${ip}]` : "unknown";
  const from = f.helo ? `${printable(f.helo)} (${client})` : client;
  const protocol = `${f.esmtp ? "ESMTP" : "SMTP"}${f.tls ? "S" : ""}`;
  const lines = [`Received: from ${from}`];
  if (f.tls) lines.push(`\t(using ${printable(f.tls.protocol)} with cipher ${printable(f.tls.cipher)})`);
  lines.push(`\tby ${f.by} (mailroom) with ${protocol} id ${f.spoolId}`);
  const [only] = f.recipients;
  const date = rfc5322Date(f.at);
  lines.push(f.recipients.length === 1 && only ? `\tfor <${printable(only)}>; ${date}` : `\t; ${date}`);
  return Buffer.from(`${lines.join("\r\n")}\r\n`, "latin1");
}

/** RFC 5321 §4.1.3 address literal: `192.0.2.7`, `IPv6:2001:db8::7` (an IPv4-mapped IPv6 address as IPv4). */
export function addressLiteral(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (mapped) return mapped;
  return isIP(ip) === 6 ? `IPv6:${ip}` : printable(ip);
}

/** Anything outside visible ASCII becomes `?` (Postfix's printable()); at most 255 characters. */
function printable(s: string): string {
  return s.slice(0, 255).replace(/[^\x21-\x7e]/g, "?");
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** RFC 5322 §3.3 date-time in UTC: `Tue, 26 Nov 2024 10:00:00 +0000`. */
export function rfc5322Date(d: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return `${DAYS[d.getUTCDay()]}, ${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${time} +0000`;
}
