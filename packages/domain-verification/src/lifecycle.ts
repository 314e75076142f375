import type { CheckResult } from "./check.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Delay before the next check of a pending domain, indexed by checks already made: 1 m, 5 m, 15 m, then hourly. */
export const PENDING_SCHEDULE_MS = [1 * MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR] as const;
/** A domain still pending this long after its verification window opened becomes `failed`. */
export const PENDING_WINDOW_MS = 72 * HOUR;
/** Verified domains are re-checked this often (the MX may move away). */
export const VERIFIED_RECHECK_MS = 24 * HOUR;

export function pendingDelayMs(checksDone: number): number {
  return PENDING_SCHEDULE_MS[Math.min(checksDone, PENDING_SCHEDULE_MS.length - 1)] as number;
}

/** The fields of a domain row the lifecycle reads. */
export type DomainState = {
  domain: string;
  status: string;
  checkCount: number;
  verifyStartedAt: Date | null;
  createdAt: Date;
  warning: string | null;
  dnsRecords: unknown;
};

export type DomainPatch = {
  status?: "pending" | "verified" | "failed";
  verifiedAt?: Date;
  warning?: string | null;
  lastCheckedAt: Date;
  nextCheckAt?: Date | null;
  checkCount?: number;
};

export type Transition =
  | "verified"
  | "failed"
  | "still_pending"
  | "warning_raised"
  | "warning_cleared"
  | "healthy"
  | "inconclusive";

/**
 * `scheduled`: the verifier's own check, which advances the schedule. `manual`: an immediate check
 * asked for over the API, which may change the status but leaves the schedule alone (asking often
 * must not push the automatic checks to hourly).
 */
export type CheckMode = "scheduled" | "manual";

export const windowStart = (d: DomainState): Date => d.verifyStartedAt ?? d.createdAt;

export function mxWarning(d: DomainState): string {
  const records = Array.isArray(d.dnsRecords) ? (d.dnsRecords as { type?: string; value?: string }[]) : [];
  const host = records.find((r) => r.type === "MX")?.value ?? "our MX host";
  return `MX record of ${d.domain} does not point to ${host}; mail still reaching us is accepted, but senders may deliver elsewhere`;
}

/**
 * What a check means for a domain (DESIGN.md §4). Pending → verified only when every record is
 * observed; pending → failed only when the window has run out AND the check was conclusive; a failed
 * lookup never changes the status or the warning. Verified domains never lose their status: a missing
 * MX raises a warning, which clears when the MX is back.
 */
export function decide(
  d: DomainState,
  check: CheckResult,
  now: Date,
  mode: CheckMode,
): { patch: DomainPatch; transition: Transition } {
  const scheduled = mode === "scheduled";
  const count = scheduled ? { checkCount: d.checkCount + 1 } : {};
  const base = { lastCheckedAt: now, ...count };

  if (d.status === "verified") {
    const next = scheduled ? { nextCheckAt: new Date(now.getTime() + VERIFIED_RECHECK_MS) } : {};
    if (check.mxFound === null) return { patch: { ...base, ...next }, transition: "inconclusive" };
    if (check.mxFound) {
      return { patch: { ...base, ...next, warning: null }, transition: d.warning ? "warning_cleared" : "healthy" };
    }
    return { patch: { ...base, ...next, warning: mxWarning(d) }, transition: "warning_raised" };
  }

  if (d.status !== "pending") return { patch: { lastCheckedAt: now }, transition: "inconclusive" };

  if (check.allFound) {
    return {
      patch: {
        ...base,
        status: "verified",
        verifiedAt: now,
        warning: null,
        nextCheckAt: new Date(now.getTime() + VERIFIED_RECHECK_MS),
      },
      transition: "verified",
    };
  }
  const deadline = windowStart(d).getTime() + PENDING_WINDOW_MS;
  if (!check.inconclusive && now.getTime() >= deadline) {
    return { patch: { ...base, status: "failed", nextCheckAt: null }, transition: "failed" };
  }
  if (!scheduled) return { patch: base, transition: check.inconclusive ? "inconclusive" : "still_pending" };
  // Past the deadline an inconclusive check retries hourly until DNS answers; before it, the last
  // check lands on the deadline so that expiry is on time.
  const delay = pendingDelayMs(d.checkCount + 1);
  const nextAt = now.getTime() >= deadline ? now.getTime() + delay : Math.min(now.getTime() + delay, deadline);
  return {
    patch: { ...base, nextCheckAt: new Date(nextAt) },
    transition: check.inconclusive ? "inconclusive" : "still_pending",
  };
}
