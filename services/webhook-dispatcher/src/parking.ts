/**
 * When a job comes back after its endpoint was busy. A fixed ~1 s sent every job of a backlog for one
 * endpoint round the queue once a second (1,000 queued deliveries: ~1,000 fetches and re-delays a
 * second, each nearly as costly as a delivery) while only the endpoint's few slots made progress.
 * Here a job is put in line behind the jobs already parked for its endpoint and comes back about
 * when its turn is due: the endpoint serves `slots` attempts at a time, each taking about as long as
 * its recent attempts did — or as long as the oldest one still in flight has been running, so an
 * endpoint that just started to hang is seen at once. A backlog goes round about once, and a hanging
 * endpoint's jobs look again every `maxMs` instead of every second. Without any measure yet the
 * delay is at least `minMs`, as before; for an endpoint measured fast here, at least a few dozen of
 * its attempt times (floorMs); always with jitter (0.5–1×).
 *
 * This only decides when a job asks again; it never makes or uses an attempt, so retries, backoff
 * and the per-endpoint limit are unchanged. It is per process and forgets: a job another process
 * takes, or one that never comes back, drops out of the line once it is overdue.
 */
export type Parking = {
  /** Parks `deliveryId` for `endpointId`: the delay (ms) until it should ask again. */
  park(deliveryId: string, endpointId: string): number;
  /** The endpoint `deliveryId` was parked for, if it was (it leaves the line). */
  take(deliveryId: string): string | undefined;
  /** An attempt to `endpointId` got its slot (`holder` names it until it finishes). */
  started(endpointId: string, holder: string): void;
  /** That attempt finished (its slot was released). */
  finished(endpointId: string, holder: string): void;
  /** How long an attempt to the endpoint takes now, as far as this process can tell (0: no idea). */
  attemptMs(endpointId: string): number;
  /** True once an attempt to the endpoint finished here (attemptMs is then more than a guess). */
  measured(endpointId: string): boolean;
};

/** Weight of the newest attempt in an endpoint's average attempt time. */
const SMOOTHING = 0.2;
/** Endpoints whose average is kept (the least recently finished are dropped beyond it). */
const MAX_AVERAGES = 10_000;
/** The shortest delay for an endpoint measured fast: this many of its attempt times… */
const FAST_TURNS = 25;
/** …and never less than this. */
const FAST_MIN_MS = 50;
/** Beyond this many parked jobs every line is pruned, not only the one being joined. */
const MAX_PARKED = 50_000;

type ParkingOptions = {
  /** Attempts one endpoint may have in flight (DISPATCHER_ENDPOINT_CONCURRENCY). */
  slots: number;
  minMs: number;
  maxMs: number;
  now?: () => number;
  random?: () => number;
};

/** Per endpoint: attempts in flight (holder → start) and the average attempt time (ms). */
function attemptTimes(now: () => number) {
  const inFlight = new Map<string, Map<string, number>>();
  const averages = new Map<string, number>();
  return {
    /** How long an attempt to the endpoint takes now, as far as this process can tell (0: no idea). */
    attemptMs(endpointId: string, t = now()): number {
      let oldest = t;
      for (const start of inFlight.get(endpointId)?.values() ?? []) oldest = Math.min(oldest, start);
      return Math.max(averages.get(endpointId) ?? 0, t - oldest);
    },
    /** True once an attempt to the endpoint finished here (it has an average). */
    measured: (endpointId: string) => averages.has(endpointId),
    started(endpointId: string, holder: string) {
      let attempts = inFlight.get(endpointId);
      if (!attempts) {
        attempts = new Map();
        inFlight.set(endpointId, attempts);
      }
      attempts.set(holder, now());
    },
    finished(endpointId: string, holder: string) {
      const attempts = inFlight.get(endpointId);
      const start = attempts?.get(holder);
      if (!attempts || start === undefined) return;
      attempts.delete(holder);
      if (attempts.size === 0) inFlight.delete(endpointId);
      const ms = now() - start;
      const avg = averages.get(endpointId);
      // Re-inserted: the map's order is then least recently finished first, the one to drop.
      averages.delete(endpointId);
      averages.set(endpointId, avg === undefined ? ms : avg + SMOOTHING * (ms - avg));
      if (averages.size > MAX_AVERAGES) averages.delete(averages.keys().next().value as string);
    },
  };
}

/** Per endpoint: the parked deliveries with when each is due back. */
function parkingLines() {
  const lines = new Map<string, Map<string, number>>();
  const parkedFor = new Map<string, string>();
  const take = (deliveryId: string): string | undefined => {
    const endpointId = parkedFor.get(deliveryId);
    if (endpointId === undefined) return undefined;
    parkedFor.delete(deliveryId);
    const line = lines.get(endpointId);
    line?.delete(deliveryId);
    if (line?.size === 0) lines.delete(endpointId);
    return endpointId;
  };
  return {
    take,
    /** The endpoint's line, after dropping the jobs overdue by more than `graceMs` (they went elsewhere). */
    line(endpointId: string, t: number, graceMs: number): Map<string, number> {
      const line = lines.get(endpointId) ?? new Map<string, number>();
      lines.set(endpointId, line);
      for (const l of parkedFor.size > MAX_PARKED ? [...lines.values()] : [line]) {
        for (const [id, due] of l) {
          if (due + graceMs < t) take(id);
        }
      }
      lines.set(endpointId, line); // a prune may have dropped the emptied line from the map
      return line;
    },
    add(line: Map<string, number>, deliveryId: string, endpointId: string, due: number) {
      line.set(deliveryId, due);
      parkedFor.set(deliveryId, endpointId);
    },
  };
}

export function createParking(opts: ParkingOptions): Parking {
  const now = opts.now ?? Date.now;
  const random = opts.random ?? Math.random;
  const times = attemptTimes(now);
  const lines = parkingLines();
  /**
   * The shortest delay: `minMs`, or for an endpoint measured fast here FAST_TURNS of its attempt
   * times (at least FAST_MIN_MS): a job of a fast endpoint parked in a passing jam (a pause of this
   * process ages the attempts in flight) is back in a moment instead of a second later.
   */
  const floorMs = (endpointId: string, ms: number) =>
    times.measured(endpointId) ? Math.min(opts.minMs, Math.max(FAST_MIN_MS, FAST_TURNS * ms)) : opts.minMs;
  return {
    take: lines.take,
    attemptMs: (endpointId) => times.attemptMs(endpointId),
    measured: times.measured,
    started: times.started,
    finished: times.finished,
    park(deliveryId, endpointId) {
      const t = now();
      lines.take(deliveryId);
      const line = lines.line(endpointId, t, opts.maxMs);
      const ms = times.attemptMs(endpointId, t);
      const turn = ms === 0 ? opts.minMs : (line.size * ms) / opts.slots;
      // Jitter spreads jobs parked together, early rather than late: one back early looks again cheaply
      // (parked again without a claim while the endpoint is saturated), one back late leaves a slot idle.
      const jitter = 0.5 + 0.5 * random();
      const delay = Math.round(Math.min(opts.maxMs, Math.max(floorMs(endpointId, ms), turn) * jitter));
      lines.add(line, deliveryId, endpointId, t + delay);
      return delay;
    },
  };
}
