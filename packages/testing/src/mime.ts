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
