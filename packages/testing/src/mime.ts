/** A multipart/mixed message with one text part and one base64 attachment, as an MTA would relay it. */
export function mimeWithAttachment(o: {
  to: string;
  from?: string;
  subject?: string;
  messageId: string;
  filename: string;
  contentType: string;
  content: Buffer;
}): string {
  return [
    `From: ${o.from ?? "sender@outside.example"}`,
    `To: ${o.to}`,
    `Subject: ${o.subject ?? "attached"}`,
    `Message-ID: ${o.messageId}`,
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="zz"',
    "",
    "--zz",
    "Content-Type: text/plain",
    "",
    "attached",
    "--zz",
    `Content-Type: ${o.contentType}`,
    `Content-Disposition: attachment; filename="${o.filename}"`,
    "Content-Transfer-Encoding: base64",
    "",
    o.content.toString("base64").replace(/.{76}/g, "$&\r\n"),
    "--zz--",
    "",
  ].join("\r\n");
}

/**
 * A message whose processing throws every time on today's code, even once NUL bytes are cleaned:
 * a Message-ID of ~4 KB that does not compress exceeds the btree limit of the (accountId,
 * messageId) index, so the Email insert fails (54000). If that insert is ever made to succeed,
 * pick another message that really fails: the poison tests and bench:e2e's poison trial need a
 * real poison, not a mock.
 */
export function poisonMessage(to: string, subject = "poison", from = "Mallory <mallory@outside.example>"): string {
  const id = Array.from({ length: 400 }, () => Math.random().toString(36).slice(2)).join("");
  return [
    `From: ${from}`,
    `To: ${to}`,
    `Subject: ${subject}`,
    `Message-ID: <${id}@outside.example>`,
    "",
    "body",
    "",
  ].join("\r\n");
}

/**
 * A message as smtp-ingest stored it, split: our `Received:` header (everything before the client's
 * `size` bytes, which spooled_messages.size counts) and the client's bytes, which must be exactly
 * what was sent.
 */
export function splitStored(raw: Uint8Array, clientSize: number): { received: string; client: Buffer } {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const cut = bytes.length - clientSize;
  return { received: bytes.subarray(0, cut).toString("latin1"), client: bytes.subarray(cut) };
}
