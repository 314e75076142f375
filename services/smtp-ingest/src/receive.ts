import { createHash } from "node:crypto";
import type { Readable } from "node:stream";
import { newId, type Queryable } from "@mailroom/db";
import { type DataBudget, sharedDataBudget } from "./data-budget.ts";

/** How DATA is taken in: slices of at most `chunkBytes` go to Postgres as they fill. */
export type ReceiveOptions = {
  db: Queryable;
  maxBytes: number;
  chunkBytes: number;
  budget: DataBudget;
};

/**
 * A message received in full and within the limit. Everything but `tail` is already in
 * spool_chunks under `spoolId` (`staged` slices); the accepting transaction joins them. `release`
 * gives the tail's bytes back to the budget once the message is accepted or refused.
 */
export type ReceivedBody = {
  spoolId: string;
  staged: number;
  tail: Buffer;
  size: number;
  sha256: string;
  release(): void;
};

export type Received = { kind: "ok"; body: ReceivedBody } | { kind: "too-big" } | { kind: "failed"; error: Error };

/**
 * Reads one DATA stream, appending slices to spool_chunks as they fill, with one write in flight
 * and the stream paused meanwhile, so a connection holds at most a slice plus one socket read.
 * Past `maxBytes` it keeps reading (the client is still sending) but keeps nothing. A failed
 * write also keeps reading and discards the rest: the answer is decided at the end. On every
 * outcome but "ok" the staged slices are deleted again (best effort: if Postgres is gone, the
 * purge in staging.ts removes them later). Rejects when the client goes away mid-DATA.
 */
export function receiveData(stream: Readable & { sizeExceeded?: boolean }, o: ReceiveOptions): Promise<Received> {
  const spoolId = newId("spool");
  const hash = createHash("sha256");
  let pending: Buffer[] = [];
  let pendingBytes = 0; // also what this connection holds of the budget, besides a write in flight
  let total = 0;
  let staged = 0;
  let error: Error | null = null;
  let writing: Promise<void> = Promise.resolve();

  const drop = () => {
    o.budget.release(pendingBytes);
    pending = [];
    pendingBytes = 0;
  };

  let busy = false; // a write is in flight (the stream is paused meanwhile)

  const flush = () => {
    if (busy || pendingBytes === 0) return;
    busy = true;
    const slice = Buffer.concat(pending, pendingBytes);
    const held = pendingBytes;
    pending = [];
    pendingBytes = 0;
    const seq = staged++;
    stream.pause();
    writing = o.db
      .query(`INSERT INTO spool_chunks ("uploadId", seq, data) VALUES ($1, $2, $3)`, [spoolId, seq, slice])
      .then(
        () => undefined,
        (err: Error) => {
          error ??= err;
        },
      )
      .then(async () => {
        o.budget.release(held);
        busy = false;
        if (error) drop();
        else if (pendingBytes >= o.chunkBytes) return flush();
        await o.budget.room();
        stream.resume();
      });
  };
  const unhold = o.budget.hold(flush);

  return new Promise<Received>((resolve, reject) => {
    stream.on("data", (chunk: Buffer) => {
      total += chunk.length;
      if (total > o.maxBytes || error) return void drop();
      hash.update(chunk);
      pending.push(chunk);
      pendingBytes += chunk.length;
      o.budget.take(chunk.length);
      if (pendingBytes >= o.chunkBytes || o.budget.exhausted) flush();
    });

    // Waits for the write in flight, and for one it chained when the slice filled again meanwhile.
    const settle = async () => {
      for (let w = writing; ; w = writing) {
        await w;
        if (w === writing) return;
      }
    };
    const discard = async () => {
      drop();
      await settle();
      if (staged) await o.db.query(`DELETE FROM spool_chunks WHERE "uploadId" = $1`, [spoolId]).catch(() => undefined);
    };

    let settled = false;
    stream.once("end", () => {
      settled = true;
      unhold();
      void settle().then(async () => {
        if (stream.sizeExceeded || total > o.maxBytes) {
          await discard();
          return resolve({ kind: "too-big" });
        }
        if (error) {
          await discard();
          return resolve({ kind: "failed", error });
        }
        const tail = Buffer.concat(pending, pendingBytes);
        const held = pendingBytes;
        pending = [];
        pendingBytes = 0;
        let released = false;
        resolve({
          kind: "ok",
          body: {
            spoolId,
            staged,
            tail,
            size: total,
            sha256: hash.digest("hex"),
            release: () => {
              if (!released) o.budget.release(held);
              released = true;
            },
          },
        });
      });
    });
    // The client went away before the final dot (smtp-server destroys the stream, with an error
    // when someone listens for one): nothing of it may stay.
    const gone = (err?: Error) => {
      if (settled) return;
      settled = true;
      unhold();
      void discard().then(() => reject(err ?? new Error("connection closed during DATA")));
    };
    stream.once("error", gone);
    stream.once("close", () => gone());
  });
}

/** How a server streams DATA: the budget shared by its connections and the slice size. */
export type DataOptions = { budget: DataBudget; chunkBytes: number };

/** For a server not given its own (main.ts passes the configured ones): one budget per process. */
export const defaultDataOptions = (): DataOptions => ({ budget: sharedDataBudget(), chunkBytes: 1024 * 1024 });
