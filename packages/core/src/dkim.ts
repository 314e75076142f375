import { generateKeyPair } from "node:crypto";
import { promisify } from "node:util";

const generate = promisify(generateKeyPair);

export type DkimKey = {
  /** DKIM selector: the domain's first DKIM token (see `dkimSelectorFor`). */
  selector: string;
  /** PKCS#8 PEM; stays on the server. */
  privateKey: string;
  /** Base64 SubjectPublicKeyInfo DER, i.e. the `p=` tag of the TXT record. */
  publicKey: string;
};

/**
 * The signing selector is the first DKIM token, so the record the account publishes
 * (`<token>._domainkey.<domain>` CNAME `<token>.dkim.<DKIM_DOMAIN>`) is the one verifiers look up,
 * and the operator serves the key as TXT at the CNAME's target.
 */
export const dkimSelectorFor = (tokens: readonly string[]): string | null => tokens[0] ?? null;

/** A fresh 2048-bit RSA key per domain (RFC 8301 minimum is 1024; 2048 is what providers issue). */
export async function createDkimKey(selector: string): Promise<DkimKey> {
  const { publicKey, privateKey } = await generate("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return { selector, privateKey, publicKey: Buffer.from(publicKey).toString("base64") };
}

/** The TXT record value that publishes `publicKey`. */
export const dkimTxtValue = (publicKey: string): string => `v=DKIM1; k=rsa; p=${publicKey}`;
