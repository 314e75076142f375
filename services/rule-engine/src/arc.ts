/**
 * ARC (RFC 8617): the chain's verdict from mailauth's validation, and the operator's local policy on
 * it. A mailing list or forwarder that changes a message breaks its DKIM signature and sends it from
 * its own address, so DMARC fails here though the author's domain passed at the intermediary. An
 * intermediary that sealed what it saw in an ARC set can vouch for that: when DMARC fails, the chain
 * validates, its newest seal is by a domain in ARC_TRUSTED_SEALERS and that sealer recorded
 * `dmarc=pass`, the failure is marked overridden (RFC 8617 §7.2, a receiver's local policy). The
 * DMARC verdict itself stays FAIL; the override and its reason are recorded beside it.
 */

/** What mailauth's `authenticate` reports under `arc` (lib/arc/index.js); `chain` is non-enumerable there. */
export type MailauthArc = {
  status?: { result?: string; comment?: string };
  i?: number | false;
  authenticationResults?: { dmarc?: { result?: string } };
  chain?: { "arc-seal"?: { parsed?: { d?: { value?: unknown } } } }[];
};

export type ArcFinding = {
  /** pass, fail or none (no ARC headers), as RFC 8617 names them. */
  result: "pass" | "fail" | "none";
  /** d= of the newest ARC-Seal (the intermediary that handed the message on). */
  sealer: string | null;
  /** What that sealer recorded for DMARC in its ARC-Authentication-Results. */
  sealerDmarc: string | null;
  reason: string | null;
};

const domainOf = (v: unknown) => (typeof v === "string" ? v.trim().toLowerCase().replace(/\.$/, "") : null);

/** The chain's result, who sealed it last, and a line saying so. */
export function readArc(arc: MailauthArc | false | undefined): ArcFinding {
  const raw = (arc ? arc.status?.result : undefined) ?? "none";
  const result = raw === "pass" || raw === "fail" ? raw : "none";
  if (!arc || result === "none") return { result: "none", sealer: null, sealerDmarc: null, reason: null };
  const sealer = domainOf(arc.chain?.at(-1)?.["arc-seal"]?.parsed?.d?.value);
  const sealerDmarc = arc.authenticationResults?.dmarc?.result?.toLowerCase() ?? null;
  if (result === "fail") {
    return { result, sealer, sealerDmarc, reason: `fail: ${arc.status?.comment || "the chain did not validate"}` };
  }
  const recorded = sealerDmarc ? `, which recorded dmarc=${sealerDmarc}` : "";
  return { result, sealer, sealerDmarc, reason: `pass: i=${arc.i || "?"}, sealed by ${sealer ?? "?"}${recorded}` };
}

/**
 * The DMARC override (true when it applies) and a line saying why it did or did not; null when
 * there is nothing to say (DMARC did not fail, or there is no valid chain).
 */
export function dmarcOverride(
  dmarcFailed: boolean,
  arc: ArcFinding,
  trusted: ReadonlySet<string>,
): { overridden: boolean; reason: string | null } {
  if (!dmarcFailed || arc.result !== "pass") return { overridden: false, reason: null };
  const sealer = arc.sealer ?? "?";
  if (!arc.sealer || !trusted.has(arc.sealer)) {
    return { overridden: false, reason: `not overridden: ARC sealer ${sealer} is not in ARC_TRUSTED_SEALERS` };
  }
  if (arc.sealerDmarc !== "pass") {
    const recorded = arc.sealerDmarc ? `dmarc=${arc.sealerDmarc}` : "no DMARC result";
    return { overridden: false, reason: `not overridden: trusted ARC sealer ${sealer} recorded ${recorded}` };
  }
  return {
    overridden: true,
    reason: `overridden: DMARC failed here, but the ARC chain is valid and its newest seal is by ${sealer} (ARC_TRUSTED_SEALERS), which recorded dmarc=pass`,
  };
}

/** ARC_TRUSTED_SEALERS: domains separated by commas or spaces, compared case-insensitively without a trailing dot. */
export function parseTrustedSealers(value: string | undefined): string[] {
  return (value ?? "")
    .split(/[\s,]+/)
    .map((d) => domainOf(d) ?? "")
    .filter((d) => d.length > 0);
}
