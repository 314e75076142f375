import { type PrismaClient, poolOf } from "@mailroom/db";
import type { ClaimedDelivery, MadeAttempt } from "@mailroom/deliveries";
import type { EventPublisher } from "@mailroom/queues";

/**
 * A circuit per endpoint, kept on the endpoint row (shared by every dispatcher). After `threshold`
 * failed attempts in a row (timeout, refused, non-2xx) the circuit opens: `failingSince` is set to
 * the start of that run and the endpoint's due deliveries stop spending attempts. One delivery at a
 * time is attempted as a probe, the first when `probeAt` comes, the next ones at intervals as long
 * as the endpoint has been failing (so they double), at least one backoff unit and at most the
 * spec's longest backoff step (120 units: 2 hours). A probe is a real attempt of a real delivery:
 * it counts toward that delivery's `maxAttempts`, and the delivery dies like any other when they
 * are used up. The first success closes the circuit and the waiting deliveries are released.
 * Deliveries never die while they wait: they have not been attempted.
 */
export type Circuit = {
  /**
   * Before attempting a claimed delivery: "attempt" (closed), "probe" (open, and this attempt took
   * the endpoint's probe) or the time until which its deliveries wait.
   */
  gate(d: ClaimedDelivery, now: Date): Promise<"attempt" | "probe" | { waitUntil: Date }>;
  /** After the attempt: the endpoint's run of failures moves on or ends (the events on a change). */
  noted(d: ClaimedDelivery, made: MadeAttempt): Promise<"opened" | "recovered" | undefined>;
  /** Endpoints this process knows to be open with no probe due yet: a job for them waits, unclaimed. */
  waiting(now?: number): string[];
  /** True while this process knows the endpoint's circuit to be open. */
  isOpen(endpointId: string): boolean;
  /** True while this process knows it to be open with no probe due yet (one of `waiting()`). */
  isWaiting(endpointId: string, now?: number): boolean;
};

export type CircuitOptions = {
  prisma: PrismaClient;
  /** Failed attempts in a row that open the circuit (default 5). */
  threshold?: number;
  /** The backoff unit (BACKOFF_UNIT_MS): probe intervals are 1 to 120 of them. */
  unitMs: number;
  /** How long a probe may run before another one may start (the attempt's lease). */
  probeLeaseMs: (d: ClaimedDelivery) => number;
  events?: EventPublisher;
};

/** The longest probe interval, in backoff units: the spec's longest retry step (2 hours). */
const MAX_PROBE_UNITS = 120;

/** The probe taken if it is due and nobody took it: probeAt moves past this attempt's lease. */
const TAKE_PROBE = `
    UPDATE "endpoints" SET "probeAt" = $2::timestamptz + $3::int * interval '1 millisecond'
     WHERE "id" = $1 AND "failingSince" IS NOT NULL AND ("probeAt" IS NULL OR "probeAt" <= $2)
    RETURNING "probeAt"`;

/**
 * One more failure. The circuit opens at `threshold` ($3); while open, a failed probe ($5) sets the
 * next probe an interval as long as the endpoint has been failing (clamped to $6…$7 ms) from now.
 * A failure of an attempt that started before the circuit opened leaves probeAt as it is.
 */
const FAILED = `
    UPDATE "endpoints" ep
       SET "consecutiveFailures" = ep."consecutiveFailures" + 1,
           "failureRunStartedAt" = coalesce(ep."failureRunStartedAt", $2),
           "failingSince" = CASE WHEN ep."consecutiveFailures" + 1 >= $3
                                 THEN coalesce(ep."failingSince", ep."failureRunStartedAt", $2) END,
           "probeAt" = CASE
             WHEN ep."consecutiveFailures" + 1 < $3 THEN NULL
             WHEN ep."failingSince" IS NULL OR $5::boolean THEN $4::timestamptz + least($7::float8, greatest($6::float8,
                    extract(epoch FROM $4::timestamptz - coalesce(ep."failingSince", ep."failureRunStartedAt", $2)) * 1000))
                    * interval '1 millisecond'
             ELSE ep."probeAt" END
      FROM (SELECT "id", "failingSince" AS "was" FROM "endpoints" WHERE "id" = $1 FOR UPDATE) old
     WHERE ep."id" = old."id"
    RETURNING old."was", ep."failingSince", ep."probeAt", ep."accountId"`;

/** A success ends the run; the circuit closes. */
const SUCCEEDED = `
    UPDATE "endpoints" ep
       SET "consecutiveFailures" = 0, "failureRunStartedAt" = NULL, "failingSince" = NULL, "probeAt" = NULL
      FROM (SELECT "id", "failingSince" AS "was" FROM "endpoints" WHERE "id" = $1 FOR UPDATE) old
     WHERE ep."id" = old."id" AND (ep."consecutiveFailures" > 0 OR ep."failingSince" IS NOT NULL)
    RETURNING old."was", ep."accountId"`;

type Failed = { was: Date | null; failingSince: Date | null; probeAt: Date | null; accountId: string };
type Pool = ReturnType<typeof poolOf>;
type Ctx = { pool: Pool; opts: CircuitOptions; threshold: number; open: Map<string, number> };

/** The endpoint as this process saw it last: open (next probe due at, ms) or not. */
function saw(c: Ctx, id: string, failingSince: Date | null, probeAt: Date | null) {
  if (failingSince === null) c.open.delete(id);
  else c.open.set(id, probeAt?.getTime() ?? 0);
}

/** A success: the run of failures ends (no write for an endpoint that had none). */
async function succeeded(c: Ctx, d: ClaimedDelivery): Promise<"recovered" | undefined> {
  if (d.endpoint.consecutiveFailures === 0 && d.endpoint.failingSince === null && !c.open.has(d.endpointId)) {
    return undefined;
  }
  c.open.delete(d.endpointId);
  const { rows } = await c.pool.query<{ was: Date | null; accountId: string }>({
    name: "endpoint-succeeded",
    text: SUCCEEDED,
    values: [d.endpointId],
  });
  const r = rows[0];
  if (!r?.was) return undefined;
  await c.opts.events?.({ type: "endpoint.recovered", accountId: r.accountId, endpointId: d.endpointId });
  return "recovered";
}

/** A failure: the run grows; at the threshold the circuit opens, a failed probe sets the next one. */
async function failed(c: Ctx, d: ClaimedDelivery, made: MadeAttempt, probe: boolean): Promise<"opened" | undefined> {
  const { rows } = await c.pool.query<Failed>({
    name: "endpoint-failed",
    text: FAILED,
    values: [
      d.endpointId,
      made.startedAt,
      c.threshold,
      made.finishedAt,
      probe,
      c.opts.unitMs,
      MAX_PROBE_UNITS * c.opts.unitMs,
    ],
  });
  const r = rows[0];
  if (!r) return undefined;
  saw(c, d.endpointId, r.failingSince, r.probeAt);
  if (r.was !== null || r.failingSince === null) return undefined;
  const failingSince = r.failingSince.toISOString();
  await c.opts.events?.({ type: "endpoint.failing", accountId: r.accountId, endpointId: d.endpointId, failingSince });
  return "opened";
}

/** Takes the endpoint's probe if it is due and no one else took it. */
async function takeProbe(c: Ctx, d: ClaimedDelivery, now: Date): Promise<Date | null> {
  const { rows } = await c.pool.query<{ probeAt: Date }>({
    name: "endpoint-take-probe",
    text: TAKE_PROBE,
    values: [d.endpointId, now, Math.ceil(c.opts.probeLeaseMs(d))],
  });
  return rows[0]?.probeAt ?? null;
}

export function createCircuit(opts: CircuitOptions): Circuit {
  /** Open endpoints as this process last saw them: when their next probe is due (ms). */
  const c: Ctx = { pool: poolOf(opts.prisma), opts, threshold: opts.threshold ?? 5, open: new Map() };
  /** The attempts (delivery.count) that are their endpoint's probe. */
  const probes = new Set<string>();
  return {
    async gate(d, now) {
      saw(c, d.endpointId, d.endpoint.failingSince, d.endpoint.probeAt);
      if (d.endpoint.failingSince === null) return "attempt";
      const probeAt = d.endpoint.probeAt;
      if (probeAt && probeAt > now) return { waitUntil: probeAt };
      const taken = await takeProbe(c, d, now);
      if (!taken) return { waitUntil: new Date(now.getTime() + opts.unitMs) };
      c.open.set(d.endpointId, taken.getTime());
      probes.add(`${d.id}.${d.attemptCount}`);
      return "probe";
    },
    noted(d, made) {
      const probe = probes.delete(`${d.id}.${d.attemptCount}`);
      return made.ok ? succeeded(c, d) : failed(c, d, made, probe);
    },
    waiting(now = Date.now()) {
      const out: string[] = [];
      for (const [id, probeAt] of c.open) if (probeAt > now) out.push(id);
      return out;
    },
    isOpen: (endpointId) => c.open.has(endpointId),
    isWaiting: (endpointId, now = Date.now()) => (c.open.get(endpointId) ?? 0) > now,
  };
}

/**
 * Endpoints failing for longer than `afterMs` are turned off (active false), as Stripe and Svix do
 * after days: their deliveries then wait, neither attempted nor dead, until the owner turns the
 * endpoint on again (PATCH active true makes its probe due at once). `endpoint.disabled` tells the
 * owner's event streams.
 */
export async function disableLongFailing(
  prisma: PrismaClient,
  afterMs: number,
  events?: EventPublisher,
): Promise<string[]> {
  const { rows } = await poolOf(prisma).query<{ id: string; accountId: string }>({
    name: "endpoint-disable-long-failing",
    text: `UPDATE "endpoints" SET "active" = false
            WHERE "active" AND "failingSince" < now() - $1::float8 * interval '1 millisecond'
        RETURNING "id", "accountId"`,
    values: [afterMs],
  });
  for (const r of rows) await events?.({ type: "endpoint.disabled", accountId: r.accountId, endpointId: r.id });
  return rows.map((r) => r.id);
}

/**
 * The endpoint's deliveries that are due now and not leased, after `afterId` in id order (a page):
 * what waited while its circuit was open, to be queued again.
 */
export async function dueDeliveries(
  prisma: PrismaClient,
  endpointId: string,
  afterId: string,
  limit: number,
): Promise<{ id: string; attemptCount: number }[]> {
  const { rows } = await poolOf(prisma).query<{ id: string; attemptCount: number }>({
    name: "endpoint-due-deliveries",
    text: `SELECT "id", "attemptCount" FROM "deliveries"
            WHERE "endpointId" = $1 AND "status" IN ('pending', 'retrying') AND "id" > $2
              AND ("nextAttemptAt" IS NULL OR "nextAttemptAt" <= now())
            ORDER BY "id" LIMIT $3`,
    values: [endpointId, afterId, limit],
  });
  return rows;
}
