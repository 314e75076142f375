import type { DnsRecord } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { dependencyErrors } from "@mailroom/observability";
import { type Periodic, startPeriodic } from "@mailroom/runtime";
import { type CheckResult, checkRecords, type RecordResult } from "./check.ts";
import type { DomainDns } from "./dns.ts";
import { type CheckMode, decide, type Transition } from "./lifecycle.ts";
import { applyPatch, claimDue, type DomainRecordRow, restartWindow } from "./store.ts";

export type Clock = () => Date;

export type VerifierDeps = {
  prisma: PrismaClient;
  dns: DomainDns;
  logger: Logger;
  now?: Clock;
};

export type CheckOutcome = { transition: Transition; applied: boolean; check: CheckResult };

const recordsOf = (d: DomainRecordRow): DnsRecord[] =>
  Array.isArray(d.dnsRecords) ? (d.dnsRecords as DnsRecord[]) : [];

/** Checks one domain's records and stores what that means for its status. */
export async function checkDomain(deps: VerifierDeps, d: DomainRecordRow, mode: CheckMode): Promise<CheckOutcome> {
  const check = await checkRecords(deps.dns, recordsOf(d));
  const now = (deps.now ?? (() => new Date()))();
  const { patch, transition } = decide(d, check, now, mode);
  const applied = await applyPatch(deps.prisma, d, patch);
  const failures = check.records.filter((r) => r.error).map((r) => `${r.type} ${r.name}: ${r.error}`);
  const level =
    transition === "inconclusive"
      ? "warn"
      : transition === "healthy" || transition === "still_pending"
        ? "debug"
        : "info";
  deps.logger[level](
    { domainId: d.id, domain: d.domain, mode, transition, applied, failures },
    `domain check: ${transition}`,
  );
  return { transition, applied, check };
}

/**
 * `POST /domains/{id}/verify`: a failed domain opens a new verification window first; then one
 * immediate check. Returns the row as stored afterwards and the per-record result.
 */
export async function verifyNow(
  deps: VerifierDeps,
  id: string,
): Promise<{ domain: DomainRecordRow; records: RecordResult[] } | null> {
  const now = (deps.now ?? (() => new Date()))();
  await restartWindow(deps.prisma, id, now);
  const before = await deps.prisma.domain.findUnique({ where: { id } });
  if (!before) return null;
  const { check } = await checkDomain(deps, before, "manual");
  const after = await deps.prisma.domain.findUnique({ where: { id } });
  return after ? { domain: after, records: check.records } : null;
}

export type VerifierOptions = VerifierDeps & {
  pollIntervalMs: number;
  batchSize: number;
  concurrency: number;
  /** How long a claimed domain stays invisible to other replicas; longer than one check can take. */
  leaseMs: number;
  /** Called with the transition of every scheduled check (metrics); absent: not counted. */
  onChecked?: (transition: Transition) => void;
};

export type RunStats = { checked: number; transitions: Partial<Record<Transition, number>> };

/** Checks every domain that is due now, in batches, `concurrency` at a time. */
export async function runDueChecks(opts: VerifierOptions): Promise<RunStats> {
  const now = opts.now ?? (() => new Date());
  const stats: RunStats = { checked: 0, transitions: {} };
  for (;;) {
    const batch = await claimDue(opts.prisma, now(), { limit: opts.batchSize, leaseMs: opts.leaseMs });
    let next = 0;
    const lane = async () => {
      while (next < batch.length) {
        const d = batch[next++] as DomainRecordRow;
        try {
          const { transition } = await checkDomain(opts, d, "scheduled");
          stats.checked++;
          stats.transitions[transition] = (stats.transitions[transition] ?? 0) + 1;
          opts.onChecked?.(transition);
        } catch (err) {
          // The lease brings the domain back later; one bad row must not stop the others.
          opts.logger.error({ err, domainId: d.id }, "domain check failed");
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, batch.length) }, lane));
    if (batch.length < opts.batchSize) return stats;
  }
}

export type Verifier = Periodic<RunStats>;

/**
 * The polling loop: every `pollIntervalMs`, check what is due. The schedule lives in Postgres
 * (`nextCheckAt`), so restarts lose nothing and replicas share the work.
 */
export function startVerifier(opts: VerifierOptions): Verifier {
  return startPeriodic({
    run: () => runDueChecks(opts),
    intervalMs: opts.pollIntervalMs,
    // Claiming due domains is a Postgres query: while it is down, one line per window, not per poll.
    onError: (err) => dependencyErrors(opts.logger).report("postgres", err, { source: "domain verifier pass" }),
  });
}
