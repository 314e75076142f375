/**
 * When a job comes back after its endpoint was busy. A fixed ~1 s sent every job of a backlog for one
 * endpoint round the queue once a second (1,000 queued deliveries: ~1,000 fetches and re-delays a
 * second, each as costly as a delivery) while only the endpoint's few slots made progress. Here a
 * job is put in line behind the jobs already parked for its endpoint and comes back about when its
 * turn is due, at the pace this process has been finishing that endpoint's attempts: a backlog goes
 * round about once, and a hanging endpoint's jobs wait up to `maxMs` between looks instead of 1 s.
 * Without a recent pace (nothing finished lately) the delay is `minMs`, as before, with jitter.
 *
 * This only decides when a job asks again; it never makes an attempt or uses one, so retries,
 * backoff and the per-endpoint limit are unchanged. It is per process and forgets: a job another
 * process takes, or one that never comes back, drops out of the line once it is overdue.
 */
export type Parking = {
  /** Parks `deliveryId` for `endpointId`: the delay (ms) until it should ask again. */
  park(deliveryId: string, endpointId: string): number;
  /** The endpoint `deliveryId` was parked for, if it was (it leaves the line). */
  take(deliveryId: string): string | undefined;
  /** One attempt to `endpointId` finished (its slot was released). */
  finished(endpointId: string): void;
};

/** Finish times kept per endpoint for its pace, and how many endpoints' paces are kept. */
const PACE_WINDOW = 32;
const MAX_PACES = 10_000;
/** Beyond this many parked jobs every line is pruned, not only the one being joined. */
const MAX_PARKED = 50_000;

export function createParking(opts: {
  minMs: number;
  maxMs: number;
  now?: () => number;
  random?: () => number;
}): Parking {
  const now = opts.now ?? Date.now;
  const random = opts.random ?? Math.random;
  /** Per endpoint: parked deliveries with when they are due back, and recent finish times. */
  const lines = new Map<string, Map<string, number>>();
  const paces = new Map<string, number[]>();
  const parkedFor = new Map<string, string>();

  /** Finishes per ms over the window, if the last one is recent enough to say anything. */
  const paceOf = (endpointId: string, t: number): number | null => {
    const times = paces.get(endpointId);
    if (!times || times.length < 2) return null;
    const first = times[0] as number;
    const last = times[times.length - 1] as number;
    if (t - last > opts.maxMs || last === first) return null;
    return (times.length - 1) / (last - first);
  };

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
    park(deliveryId, endpointId) {
      const t = now();
      take(deliveryId);
      let line = lines.get(endpointId);
      if (!line) {
        line = new Map();
        lines.set(endpointId, line);
      }
      // Jobs overdue by more than maxMs went elsewhere (another process, removed): out of the line.
      for (const l of parkedFor.size > MAX_PARKED ? lines.values() : [line]) {
        for (const [id, due] of l) {
          if (due + opts.maxMs < t) take(id);
        }
      }
      const pace = paceOf(endpointId, t);
      const inLine = pace === null ? opts.minMs : line.size / pace;
      const jitter = 0.5 + random(); // spreads jobs parked together
      const delay = Math.round(Math.min(opts.maxMs, Math.max(opts.minMs, inLine) * jitter));
      line.set(deliveryId, t + delay);
      parkedFor.set(deliveryId, endpointId);
      return delay;
    },
    finished(endpointId) {
      const times = paces.get(endpointId) ?? [];
      // Re-inserted: the map's order is then least recently finished first, the one to drop.
      paces.delete(endpointId);
      paces.set(endpointId, times);
      times.push(now());
      if (times.length > PACE_WINDOW) times.shift();
      if (paces.size > MAX_PACES) paces.delete(paces.keys().next().value as string);
    },
  };
}
