import { authenticate } from "mailauth";
import { dmarcOverride, type MailauthArc, readArc } from "./arc.ts";
import { cacheImportedDkimKeys } from "./dkim-keys.ts";

// Every DKIM verification of this process reuses the import of a key record it has seen (dkim-keys.ts).
cacheImportedDkimKeys();

/** The SES verdict set (DESIGN.md §4). */
export type Verdict = "PASS" | "FAIL" | "GRAY" | "PROCESSING_FAILED";

export type AuthVerdicts = {
  spf: Verdict;
  dkim: Verdict;
  /** As evaluated here: an ARC override leaves it FAIL. */
  dmarc: Verdict;
  /** The ARC chain: PASS, FAIL, GRAY when the message has none. */
  arc: Verdict;
  /** DMARC failed, and a valid ARC chain from a trusted sealer vouched for the message (arc.ts). */
  dmarcOverridden: boolean;
  /** Why, in words: the ARC result and the override decision (null: nothing to say). */
  reasons: { arc: string | null; dmarc: string | null };
};

export const AUTH_NOT_VERIFIED: AuthVerdicts = {
  spf: "PROCESSING_FAILED",
  dkim: "PROCESSING_FAILED",
  dmarc: "PROCESSING_FAILED",
  arc: "PROCESSING_FAILED",
  dmarcOverridden: false,
  reasons: { arc: null, dmarc: null },
};

/** A DNS resolver with the shape of `dns.promises.resolve(name, rrtype)`; tests point it at a loopback server. */
export type DnsResolve = (name: string, rrtype: string) => Promise<unknown>;

export type AuthInput = {
  raw: Uint8Array;
  ip: string | null;
  helo: string | null;
  mailFrom: string;
  mta: string;
  /** ARC_TRUSTED_SEALERS (lowercased domains); absent: no DMARC failure is overridden. */
  trustedArcSealers?: ReadonlySet<string>;
};

const NO_SEALERS: ReadonlySet<string> = new Set();

const mapResult = (result: string | undefined): Verdict => {
  switch ((result ?? "").toLowerCase()) {
    case "pass":
      return "PASS";
    case "fail":
    case "softfail":
    case "policy":
      return "FAIL";
    case "temperror":
    case "permerror":
      return "PROCESSING_FAILED";
    default:
      return "GRAY"; // none, neutral: nothing to say either way
  }
};

/** SPF (connecting IP, HELO, MAIL FROM), DKIM, DMARC and ARC with mailauth. Never throws. */
export async function authVerdicts(input: AuthInput, resolver: DnsResolve): Promise<AuthVerdicts> {
  try {
    const r = await authenticate(Buffer.from(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength), {
      ip: input.ip ?? undefined,
      helo: input.helo ?? undefined,
      sender: input.mailFrom || undefined,
      mta: input.mta,
      resolver: resolver as never,
      disableBimi: true,
    });
    const spf = r.spf && typeof r.spf === "object" ? mapResult(r.spf.status?.result) : "GRAY";
    const dkimResults = (r.dkim?.results ?? []) as { status?: { result?: string; comment?: string | false } }[];
    // mailauth's lenient mode reports a body-hash mismatch as "neutral"; RFC 6376 §6.1.3 calls it a
    // PERMFAIL and RFC 8601 reports it as "fail" — a signature that does not verify is a FAIL here.
    const dkimStatuses = dkimResults.map((d) =>
      d.status?.result === "neutral" && /body hash did not verify/.test(String(d.status.comment))
        ? "FAIL"
        : mapResult(d.status?.result),
    );
    const dkim: Verdict = dkimStatuses.includes("PASS")
      ? "PASS"
      : dkimStatuses.includes("FAIL")
        ? "FAIL"
        : dkimStatuses.includes("PROCESSING_FAILED")
          ? "PROCESSING_FAILED"
          : "GRAY";
    const dmarc = r.dmarc && typeof r.dmarc === "object" ? mapResult(r.dmarc.status?.result) : "GRAY";
    return { spf, dkim, dmarc, ...arcVerdicts(r.arc as MailauthArc | false, dmarc, input.trustedArcSealers) };
  } catch {
    return AUTH_NOT_VERIFIED;
  }
}

function arcVerdicts(arc: MailauthArc | false, dmarc: Verdict, trusted = NO_SEALERS) {
  const found = readArc(arc);
  const override = dmarcOverride(dmarc === "FAIL", found, trusted);
  return {
    arc: mapResult(found.result),
    dmarcOverridden: override.overridden,
    reasons: { arc: found.reason, dmarc: override.reason },
  };
}
