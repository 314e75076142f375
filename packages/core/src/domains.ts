import { isIP } from "node:net";
import type { DnsRecord } from "./views.ts";

/**
 * TLDs that can never be public (RFC 2606, RFC 6761, RFC 6762, RFC 7686, ICANN name-collision
 * names, and the private-use suggestions). Registering one would accept mail for nobody real.
 */
const RESERVED_TLDS = new Set([
  "test",
  "example",
  "invalid",
  "localhost",
  "local",
  "onion",
  "internal",
  "intranet",
  "private",
  "corp",
  "home",
  "lan",
  "localdomain",
  "home.arpa",
  "arpa",
  "alt",
]);

export type DomainCheck = { ok: true; domain: string } | { ok: false; error: string };

/** Normalises (trim, lowercase, trailing dot) and checks that `input` can be a public domain name. */
export function normalizePublicDomain(input: string): DomainCheck {
  const domain = input.trim().toLowerCase().replace(/\.$/, "");
  if (domain.length === 0) return { ok: false, error: "domain: must not be empty" };
  if (domain.length > 253) return { ok: false, error: "domain: must be at most 253 characters" };
  if (isIP(domain) || isIP(domain.replace(/^\[|\]$/g, ""))) {
    return { ok: false, error: "domain: must be a domain name, not an IP address" };
  }
  const labels = domain.split(".");
  if (labels.length < 2) return { ok: false, error: "domain: must have at least two labels (e.g. example.com)" };
  for (const label of labels) {
    if (label.length === 0) return { ok: false, error: "domain: must not contain empty labels" };
    if (label.length > 63) return { ok: false, error: "domain: each label must be at most 63 characters" };
    if (!/^[a-z0-9-]+$/.test(label)) {
      return {
        ok: false,
        error: "domain: labels may contain only letters, digits and hyphens (use punycode for IDNs)",
      };
    }
    if (label.startsWith("-") || label.endsWith("-")) {
      return { ok: false, error: "domain: labels must not start or end with a hyphen" };
    }
  }
  const tld = labels[labels.length - 1] as string;
  if (!/^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/.test(tld)) {
    return { ok: false, error: "domain: the top-level domain is not valid" };
  }
  const lastTwo = labels.slice(-2).join(".");
  if (RESERVED_TLDS.has(tld) || RESERVED_TLDS.has(lastTwo)) {
    return { ok: false, error: `domain: .${RESERVED_TLDS.has(lastTwo) ? lastTwo : tld} is reserved and not public` };
  }
  return { ok: true, domain };
}

/** The records an account must publish (DESIGN.md §4): one MX and one DKIM CNAME per token. */
export function domainDnsRecords(
  domain: string,
  tokens: readonly string[],
  mxHost: string,
  dkimDomain: string,
): DnsRecord[] {
  return [
    { type: "MX", name: domain, value: mxHost, priority: 10 },
    ...tokens.map((t) => ({ type: "CNAME", name: `${t}._domainkey.${domain}`, value: `${t}.dkim.${dkimDomain}` })),
  ];
}

export const LOCAL_PART_PATTERN = /^[a-z0-9._+-]{1,64}$/;

export type LocalPartCheck = { ok: true; localPart: string } | { ok: false; error: string };

/** Spec §8: 1 to 64 characters, letters, digits and `._+-`, lowercased. */
export function normalizeLocalPart(input: string): LocalPartCheck {
  const localPart = input.trim().toLowerCase();
  if (localPart.length < 1 || localPart.length > 64) {
    return { ok: false, error: "localPart: must be 1 to 64 characters" };
  }
  if (!LOCAL_PART_PATTERN.test(localPart)) {
    return { ok: false, error: "localPart: may contain only letters, digits and the characters . _ + -" };
  }
  return { ok: true, localPart };
}
