import type pg from "pg";
import {
  type PreparedStore,
  prepareStore,
  type StoreInput,
  type StoreResult,
  storeInTransaction,
  storeResult,
} from "./store.ts";

/** How much one store transaction takes at most (the rest waits for the next). */
export type StoreBatchLimits = { maxEmails: number; maxBytes: number };

export const defaultStoreBatchLimits: StoreBatchLimits = { maxEmails: 32, maxBytes: 8 * 1024 * 1024 };

export type StoreEmail = (input: StoreInput) => Promise<StoreResult>;

type Waiting = { prepared: PreparedStore; bytes: number; resolve(r: StoreResult): void; reject(err: unknown): void };

/**
 * Group commit of the rule engine's store transactions, as the ingest does for accepts
 * (accept-batch.ts there): an email whose store arrives while no store transaction of this process
 * is in flight is stored at once, alone; those that arrive meanwhile wait for it and then go
 * together, in one transaction (store.ts storeInTransaction: BEGIN, their duplicate locks in key
 * order, one store statement each, COMMIT, in one round trip). No timer, so one message at a time
 * pays nothing, and the busier the engine (an inbound job carries several recipients, and jobs run
 * side by side), the more emails share a commit. Each caller learns its own email's result only
 * once the transaction has committed, as before. If a shared transaction fails, nothing of it was
 * written and each of its emails is stored alone, so one email's failure (a poison message) never
 * becomes another's.
 */
export function storeInBatches(pool: pg.Pool, limits: StoreBatchLimits = defaultStoreBatchLimits): StoreEmail {
  const waiting: Waiting[] = [];
  let writing = false;

  const next = () => {
    if (writing || waiting.length === 0) return;
    writing = true;
    void settle(pool, take(waiting, limits)).finally(() => {
      writing = false;
      next();
    });
  };

  return (input) =>
    new Promise<StoreResult>((resolve, reject) => {
      const e = input.email;
      const bytes = e.textBody.length + e.htmlBody.length + e.strippedText.length;
      waiting.push({ prepared: prepareStore(input), bytes, resolve, reject });
      next();
    });
}

/** The oldest waiting stores, up to the limits (always at least one). */
function take(waiting: Waiting[], limits: StoreBatchLimits): Waiting[] {
  let n = 0;
  let bytes = 0;
  for (const w of waiting) {
    if (n > 0 && (n >= limits.maxEmails || bytes + w.bytes > limits.maxBytes)) break;
    n += 1;
    bytes += w.bytes;
  }
  return waiting.splice(0, n);
}

async function settle(pool: pg.Pool, batch: Waiting[]): Promise<void> {
  try {
    const rows = await storeInTransaction(
      pool,
      batch.map((w) => w.prepared),
    );
    for (const [i, w] of batch.entries()) w.resolve(storeResult(rows[i]));
  } catch (err) {
    const [only] = batch;
    if (batch.length === 1 && only) return only.reject(err);
    // Nothing of the shared transaction was written: each alone, so a failure stays its own email's.
    await Promise.all(
      batch.map((w) =>
        storeInTransaction(pool, [w.prepared]).then((rows) => w.resolve(storeResult(rows[0])), w.reject),
      ),
    );
  }
}
