/**
 * Coalesces concurrent calls into one batched run (one SQL statement for many attempts): a call made
 * while `concurrency` runs are in flight waits for one to finish and goes out with every call that
 * arrived meanwhile, up to `max`. No timers: a call made while nothing is in flight goes out at once,
 * so batching only costs latency when a statement is already on the wire, and then the wait is what
 * that statement has left.
 *
 * - Items with the same `key` never share a run; a later one waits for the next run. (Two jobs for
 *   one delivery in one claim statement would both see the row the statement claimed once.)
 * - `run` returns one output per item, in order. When a run of several items fails, each item is run
 *   again on its own, so one item the database refuses cannot fail the others; a single item's
 *   error goes to its caller as it would without batching.
 */
export type Batcher<I, O> = (item: I) => Promise<O>;

type Pending<I, O> = { item: I; resolve: (out: O) => void; reject: (err: unknown) => void };

export function createBatcher<I, O>(
  run: (items: I[]) => Promise<O[]>,
  opts: { max: number; concurrency?: number; key?: (item: I) => string },
): Batcher<I, O> {
  const concurrency = opts.concurrency ?? 1;
  let waiting: Pending<I, O>[] = [];
  let running = 0;

  /** The next run's items, oldest first, without two of one key; the rest keep waiting. */
  const take = (): Pending<I, O>[] => {
    const batch: Pending<I, O>[] = [];
    const keys = new Set<string>();
    const rest: Pending<I, O>[] = [];
    for (const p of waiting) {
      const k = opts.key?.(p.item);
      if (batch.length < opts.max && (k === undefined || !keys.has(k))) {
        batch.push(p);
        if (k !== undefined) keys.add(k);
      } else rest.push(p);
    }
    waiting = rest;
    return batch;
  };

  const settle = async (batch: Pending<I, O>[]) => {
    try {
      const out = await run(batch.map((p) => p.item));
      for (const [i, p] of batch.entries()) p.resolve(out[i] as O);
    } catch (err) {
      if (batch.length === 1) return (batch[0] as Pending<I, O>).reject(err);
      await Promise.all(batch.map((p) => run([p.item]).then((out) => p.resolve(out[0] as O), p.reject)));
    }
  };

  const pump = () => {
    while (running < concurrency && waiting.length > 0) {
      running++;
      void settle(take()).finally(() => {
        running--;
        pump();
      });
    }
  };

  return (item) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      pump();
    });
}
