import { authenticate } from "mailauth";
import { cacheImportedDkimKeys } from "./dkim-keys.ts";

// Every DKIM verification of this process reuses the import of a key record it has seen (dkim-keys.ts).
cacheImportedDkimKeys();

/** The SES verdict set (DESIGN.md §4). */
export type Verdict = "PASS" | "FAIL" | "GRAY" | "PROCESSING_FAILED";

export type AuthVerdicts = { spf: Verdict; dkim: Verdict; dmarc: Verdict };

/** A DNS resolver with the shape of `dns.promises.resolve(name, rrtype)`; tests point it at a loopback server. */
export type DnsResolve = (name: string, rrtype: string) => Promise<unknown>;

export type AuthInput = { raw: Uint8Array; ip: string | null; helo: string | null; mailFrom: string; mta: string };

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

/** SPF (connecting IP, HELO, MAIL FROM), DKIM and DMARC with mailauth. Never throws. */
export async function authVerdicts(input: AuthInput, resolver: DnsResolve): Promise<AuthVerdicts> {
  try {
    const r = await authenticate(Buffer.from(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength), {
      ip: input.ip ?? undefined,
      helo: input.helo ?? undefined,
      sender: input.mailFrom || undefined,
      mta: input.mta,
      resolver: resolver as never,
      disableArc: true,
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
    return { spf, dkim, dmarc };
  } catch {
    return { spf: "PROCESSING_FAILED", dkim: "PROCESSING_FAILED", dmarc: "PROCESSING_FAILED" };
  }
}
