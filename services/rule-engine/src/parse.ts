import { createHash } from "node:crypto";
import { type AddressObject, simpleParser } from "mailparser";

export type ParsedAttachment = {
  filename: string;
  contentType: string;
  size: number;
  contentId: string | null;
  disposition: "attachment" | "inline";
  checksum: string;
  content: Buffer;
};

export type ParsedEmail = {
  messageId: string;
  inReplyTo: string | null;
  references: string[];
  fromAddress: string;
  fromName: string | null;
  toAddresses: string[];
  ccAddresses: string[];
  replyTo: string[];
  subject: string;
  textBody: string;
  htmlBody: string;
  headers: { key: string; value: string }[];
  attachments: ParsedAttachment[];
};

const addresses = (field: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(field) ? field : field ? [field] : [])
    .flatMap((o) => o.value)
    .flatMap((a) => (a.group ? a.group : [a]))
    .map((a) => a.address?.toLowerCase() ?? "")
    .filter((a) => a !== "");

const messageIds = (v: string | string[] | undefined): string[] =>
  (Array.isArray(v) ? v : v ? v.split(/\s+/) : []).map((s) => s.trim()).filter(Boolean);

/**
 * Parses raw MIME with mailparser. Link detection in text is skipped on purpose: it is mailparser's
 * known expensive path (linkify on hostile text) and nothing here needs it.
 */
export async function parseEmail(raw: Buffer, fallbackIdDomain: string): Promise<ParsedEmail> {
  const m = await simpleParser(raw, { skipTextLinks: true, skipImageLinks: true, keepCidLinks: true });
  const from = m.from?.value[0];
  const contentHash = createHash("sha256").update(raw).digest("hex");
  return {
    // A message without Message-ID still needs a stable one for threading and dedupe.
    messageId: m.messageId ?? `<${contentHash.slice(0, 32)}@${fallbackIdDomain}>`,
    inReplyTo: messageIds(m.inReplyTo)[0] ?? null,
    references: messageIds(m.references),
    fromAddress: from?.address?.toLowerCase() ?? "",
    fromName: from?.name || null,
    toAddresses: addresses(m.to),
    ccAddresses: addresses(m.cc),
    replyTo: addresses(m.replyTo),
    subject: m.subject ?? "",
    textBody: m.text ?? "",
    htmlBody: typeof m.html === "string" ? m.html : "",
    headers: m.headerLines.map((h) => ({ key: h.key, value: h.line.slice(h.line.indexOf(":") + 1).trim() })),
    attachments: m.attachments.map((a) => ({
      filename: a.filename ?? "attachment",
      contentType: a.contentType || "application/octet-stream",
      size: a.size ?? a.content.length,
      contentId: a.cid ?? null,
      disposition: a.contentDisposition === "inline" ? "inline" : "attachment",
      checksum: a.checksum,
      content: a.content,
    })),
  };
}
