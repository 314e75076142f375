/**
 * A message whose processing throws every time on today's code, even once NUL bytes are cleaned:
 * a Message-ID of ~4 KB that does not compress exceeds the btree limit of the (accountId,
 * messageId) index, so the Email insert fails (54000). If that insert is ever made to succeed,
 * pick another message that really fails: these tests need a real poison, not a mock.
 */
export function poisonMessage(to: string, subject = "poison"): string {
  const id = Array.from({ length: 400 }, () => Math.random().toString(36).slice(2)).join("");
  return [
    "From: Mallory <mallory@outside.example>",
    `To: ${to}`,
    `Subject: ${subject}`,
    `Message-ID: <${id}@outside.example>`,
    "",
    "body",
    "",
  ].join("\r\n");
}
