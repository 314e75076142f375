import type pg from "pg";
import { type Signal, type Spooled, type SpoolInput, signalJobs, spoolMessage, spoolRows } from "./spool.ts";
import { spoolTogether } from "./spool-batch.ts";

/** How much one batch takes at most (the rest waits for the next). */
export type BatchLimits = { maxMessages: number; maxBytes: number };

/** `written(n)`: a batch statement wrote n messages (for the metrics). */
export type BatchObserver = { written(messages: number): void };

export const defaultBatchLimits: BatchLimits = { maxMessages: 64, maxBytes: 8 * 1024 * 1024 };

/** `accept` resolves with the spool id once durable; `waiting`: messages held for the next batch. */
export type Accepting = { accept(input: SpoolInput): Promise<string>; waiting(): number };

type Waiting = { input: SpoolInput; resolve(spoolId: string): void; reject(err: unknown): void };

/**
 * Group commit of accepted messages (issue 13). A message arriving while no batch statement is in
 * flight is written at once, alone; messages arriving while one is in flight wait for it and then
 * go together in the next: one statement and one commit for all of them (spool-batch.ts); then every
 * caller is answered and all their jobs go in one Redis call, not awaited. No timer: a single
 * connection pays nothing extra, and the busier the server, the bigger the batches. Durability is
 * spoolMessage's: each caller's promise resolves (SMTP 250) only after its bytes, recipients (the
 * rule engine's work items) and usage count are committed; a job that cannot be queued is left to
 * the rule engine's sweeper (spool.ts signalJobs). A message
 * the batch could not count (its account's shards have no room for the batch's share), or every
 * message of a batch whose statement failed, settles alone instead, so one message's refusal
 * (OverAllotment) or fault never becomes another's. Messages that do not fit the batch statement
 * (staged while streaming, or for more than one account) take spoolMessage directly.
 */
export function acceptInBatches(
  pool: pg.Pool,
  signal: Signal,
  limits: BatchLimits = defaultBatchLimits,
  observer: BatchObserver,
): Accepting {
  const waiting: Waiting[] = [];
  let writing = false; // a batch statement is in flight; its Redis call is not counted

  const next = () => {
    if (writing || waiting.length === 0) return;
    writing = true;
    void settle(pool, signal, take(waiting, limits), observer, () => {
      writing = false;
      next();
    });
  };

  return {
    accept(input) {
      if (!batchable(input)) return spoolMessage(pool, signal, input);
      return new Promise<string>((resolve, reject) => {
        waiting.push({ input, resolve, reject });
        next();
      });
    },
    waiting: () => waiting.length,
  };
}

const batchable = (input: SpoolInput) =>
  input.body.staged === 0 &&
  input.routes.length > 0 &&
  input.routes.every((r) => r.accountId === input.routes[0]?.accountId);

/** The oldest waiting messages, up to the limits (always at least one). */
function take(waiting: Waiting[], limits: BatchLimits): Waiting[] {
  let n = 0;
  let bytes = 0;
  for (const w of waiting) {
    if (n > 0 && (n >= limits.maxMessages || bytes + w.input.body.size > limits.maxBytes)) break;
    n += 1;
    bytes += w.input.body.size;
  }
  return waiting.splice(0, n);
}

/** Writes one batch, calls `written` once its statement is done, answers, then queues its jobs. */
async function settle(
  pool: pg.Pool,
  signal: Signal,
  batch: Waiting[],
  observer: BatchObserver,
  written: () => void,
): Promise<void> {
  const alone = (w: Waiting) => spoolMessage(pool, signal, w.input).then(w.resolve, w.reject);
  let spooled: Spooled;
  let together: Waiting[];
  try {
    const [first] = batch;
    if (batch.length === 1 && first) {
      spooled = await spoolRows(pool, first.input);
      together = batch;
    } else {
      const r = await spoolTogether(
        pool,
        batch.map((w) => w.input),
      );
      spooled = r.spooled;
      together = batch.filter((w) => r.accepted.has(w.input.body.spoolId));
      for (const w of batch) if (!r.accepted.has(w.input.body.spoolId)) void alone(w);
    }
  } catch (err) {
    written();
    if (batch.length === 1) batch[0]?.reject(err);
    else for (const w of batch) void alone(w);
    return;
  }
  written();
  observer.written(together.length);
  if (together.length === 0) return;
  for (const w of together) w.resolve(w.input.body.spoolId);
  await signalJobs(signal, spooled);
}
