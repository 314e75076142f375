/**
 * A process-wide budget of message bytes being processed at once. Processing one message holds a
 * few copies of it at the same time (the raw bytes, the decoded bodies, the parameters on their way
 * to Postgres), so RULE_ENGINE_CONCURRENCY big messages at once multiply the peak memory; with a
 * budget, big messages wait their turn while small ones still run side by side. A message larger
 * than the whole budget runs when nothing else is in flight, so every message gets processed.
 * First come, first served: a big message is not starved by a stream of small ones.
 */
export type ByteBudget = {
  /** Resolves once `bytes` fit; call the returned function exactly once when done. */
  acquire(bytes: number): Promise<() => void>;
  readonly inFlight: number;
};

export function createByteBudget(limit: number): ByteBudget {
  let inFlight = 0;
  const queue: { bytes: number; grant: () => void }[] = [];
  const fits = (bytes: number) => inFlight === 0 || inFlight + bytes <= limit;
  const pump = () => {
    while (queue.length > 0 && fits((queue[0] as { bytes: number }).bytes)) {
      const next = queue.shift() as { bytes: number; grant: () => void };
      inFlight += next.bytes;
      next.grant();
    }
  };
  const releaser = (bytes: number) => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      inFlight -= bytes;
      pump();
    };
  };
  return {
    get inFlight() {
      return inFlight;
    },
    acquire(bytes) {
      if (queue.length === 0 && fits(bytes)) {
        inFlight += bytes;
        return Promise.resolve(releaser(bytes));
      }
      return new Promise((resolve) => queue.push({ bytes, grant: () => resolve(releaser(bytes)) }));
    },
  };
}
