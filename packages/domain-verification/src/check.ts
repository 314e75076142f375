import type { DnsRecord } from "@mailroom/core";
import { type DomainDns, type Lookup, normalizeName } from "./dns.ts";

/** One published record as observed now; `error` only when the lookup itself failed. */
export type RecordResult = {
  type: string;
  name: string;
  value: string;
  priority?: number;
  found: boolean;
  observed: string[];
  error?: string;
};

export type CheckResult = {
  records: RecordResult[];
  /** Every record observed: the domain may verify. */
  allFound: boolean;
  /** At least one lookup failed (timeout, SERVFAIL…): the check is inconclusive. */
  inconclusive: boolean;
  /** The MX lookups' verdict alone: true, false, or null when they failed. */
  mxFound: boolean | null;
};

/**
 * Looks up every record a domain must publish. MX: the name's MX set must contain the expected host
 * (other MX hosts may sit beside it). CNAME: the name must be a CNAME to the expected target.
 * Names compare case-insensitively and without trailing dots.
 */
export async function checkRecords(dnsClient: DomainDns, records: readonly DnsRecord[]): Promise<CheckResult> {
  const results = await Promise.all(
    records.map(async (record): Promise<RecordResult> => {
      const type = record.type.toUpperCase();
      const lookup: Lookup =
        type === "MX"
          ? await dnsClient.mx(record.name)
          : type === "CNAME"
            ? await dnsClient.cname(record.name)
            : { kind: "failed", code: `unsupported record type ${record.type}` };
      const observed = lookup.kind === "found" ? lookup.values : [];
      const base = {
        type: record.type,
        name: record.name,
        value: record.value,
        ...(record.priority !== undefined ? { priority: record.priority } : {}),
      };
      if (lookup.kind === "failed")
        return { ...base, found: false, observed, error: `DNS lookup failed: ${lookup.code}` };
      return { ...base, found: observed.includes(normalizeName(record.value)), observed };
    }),
  );
  const mx = results.filter((r) => r.type.toUpperCase() === "MX");
  return {
    records: results,
    allFound: results.length > 0 && results.every((r) => r.found),
    inconclusive: results.some((r) => r.error !== undefined),
    mxFound: mx.some((r) => r.error) ? null : mx.length > 0 && mx.every((r) => r.found),
  };
}
