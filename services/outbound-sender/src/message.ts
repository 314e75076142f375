import type Mail from "nodemailer/lib/mailer";

export type OutboundRow = {
  messageId: string;
  inReplyTo: string | null;
  references: string[];
  fromAddress: string;
  fromName: string | null;
  toAddresses: string[];
  ccAddresses: string[];
  subject: string;
  textBody: string;
  htmlBody: string;
  receivedAt: Date;
  attachments: { index: number; filename: string; contentType: string; content: Uint8Array | null }[];
};

export type SigningDomain = { domain: string; dkimSelector: string; dkimPrivateKey: string };

/**
 * The MIME message for a stored outbound email. Message-ID and Date are the stored ones, so every
 * attempt sends the same message (a receiver deduplicates a retry by its Message-ID) and an answer's
 * In-Reply-To finds this email. DKIM-signed with the domain's key by nodemailer.
 */
export function buildMail(email: OutboundRow, signer: SigningDomain): Mail.Options {
  return {
    from: { name: email.fromName ?? "", address: email.fromAddress },
    to: email.toAddresses,
    cc: email.ccAddresses.length ? email.ccAddresses : undefined,
    subject: email.subject,
    text: email.textBody || undefined,
    html: email.htmlBody || undefined,
    messageId: email.messageId,
    date: email.receivedAt,
    inReplyTo: email.inReplyTo ?? undefined,
    references: email.references.length ? email.references : undefined,
    attachments: [...email.attachments]
      .sort((a, b) => a.index - b.index)
      .map((a) => ({ filename: a.filename, contentType: a.contentType, content: Buffer.from(a.content ?? []) })),
    envelope: { from: email.fromAddress, to: [...email.toAddresses, ...email.ccAddresses] },
    dkim: { domainName: signer.domain, keySelector: signer.dkimSelector, privateKey: signer.dkimPrivateKey },
  };
}
