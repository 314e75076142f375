import { generateKeyPairSync } from "node:crypto";
import { authenticate, dkimSign, sealMessage } from "mailauth";

/**
 * Mail as it reaches us through a mailing list that seals with ARC (RFC 8617): the author's message,
 * DKIM-signed; the list authenticates it as received from the author's server, tags the subject,
 * adds a footer (which breaks the author's signature), and seals what it sends with its own key.
 * mailauth plays both parts; the keys are published by a test's loopback DNS server.
 */
export type SigningKey = { pem: string /** The TXT record that publishes the public key. */; record: string };

export function signingKey(): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    pem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    record: `v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`,
  };
}

/** A plain-text message from `from`, signed by its domain with `selector` (relaxed/relaxed). */
export async function authorSigned(o: {
  from: string;
  to: string;
  subject: string;
  messageId: string;
  selector: string;
  key: SigningKey;
}): Promise<string> {
  const domain = o.from.slice(o.from.lastIndexOf("@") + 1);
  const raw =
    `From: <${o.from}>\r\nTo: <${o.to}>\r\nSubject: ${o.subject}\r\nMessage-ID: ${o.messageId}\r\n` +
    `Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n` +
    "See you at the meeting.\r\n";
  const signed = await dkimSign(raw, {
    canonicalization: "relaxed/relaxed",
    signatureData: [{ signingDomain: domain, selector: o.selector, privateKey: o.key.pem, algorithm: "rsa-sha256" }],
  } as unknown as Parameters<typeof dkimSign>[1]);
  return signed.signatures + raw;
}

export type ArcForwarder = {
  /** The list's domain: d= of its ARC-Seal. */
  domain: string;
  selector: string;
  key: SigningKey;
  /** Looks up the author's records as the list's own MTA would (the test's loopback DNS). */
  resolver: (name: string, rrtype: string) => Promise<unknown>;
};

/**
 * What the list sends on: `original` as received from `from.ip` (its SPF, DKIM and DMARC recorded in
 * the ARC-Authentication-Results), with `[list]` in the subject and a footer, sealed by the list.
 * Returns the message and what the list saw (its DMARC result).
 */
export async function arcForward(
  original: string,
  list: ArcForwarder,
  from: { ip: string; helo: string; mailFrom: string },
): Promise<{ raw: string; dmarcAtList: string | null }> {
  const seen = await authenticate(original, {
    ip: from.ip,
    helo: from.helo,
    sender: from.mailFrom,
    mta: `mx.${list.domain}`,
    resolver: list.resolver as never,
    disableBimi: true,
  });
  const changed = original
    .replace(/^Subject: /m, "Subject: [list] ")
    .replace("See you at the meeting.\r\n", `See you at the meeting.\r\n--\r\nsent through ${list.domain}\r\n`);
  const seal = await sealMessage(changed, {
    signingDomain: list.domain,
    selector: list.selector,
    privateKey: list.key.pem,
    authResults: seen.arc ? String(seen.arc.authResults) : "",
    cv: "none",
  });
  if (!seal.length) throw new Error(`${list.domain} could not seal the message`);
  return { raw: seal.toString() + changed, dmarcAtList: seen.dmarc ? seen.dmarc.status.result : null };
}
