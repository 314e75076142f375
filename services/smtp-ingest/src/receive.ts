import { createHash, type Hash } from "node:crypto";
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

type DataStream = Readable & { sizeExceeded?: boolean };

/**
 * Reads one DATA stream, appending slices to spool_chunks as they fill, with one write in flight
 * and the stream paused meanwhile, so a connection holds at most a slice plus one socket read.
 * Past `maxBytes` it keeps reading (the client is still sending) but keeps nothing. A failed
 * write also keeps reading and discards the rest: the answer is decided at the end. On every
 * outcome but "ok" the staged slices are deleted again (best effort: if Postgres is gone, the
 * purge in staging.ts removes them later). Rejects when the client goes away mid-DATA.
 */
export function receiveData(stream: DataStream, o: ReceiveOptions): Promise<Received> {
  const upload = new Upload(stream, o);
  return new Promise<Received>((resolve, reject) => upload.listen(resolve, reject));
}

/**
 * One DATA stream on its way in, in steps: take each socket read (take), write a full slice
 * (flush, then afterWrite), and at the end answer (finish) or clean up (discard). A class rather
 * than closures: one object per message on the per-chunk path, and each step named.
 */
class Upload {
  readonly spoolId = newId("spool");
  private readonly hash: Hash = createHash("sha256");
  private pending: Buffer[] = [];
  /** Also what this connection holds of the budget, besides a write in flight. */
  private pendingBytes = 0;
  private total = 0;
  private staged = 0;
  private error: Error | null = null;
  private writing: Promise<void> = Promise.resolve();
  /** A write is in flight (the stream is paused meanwhile). */
  private busy = false;
  private settled = false;
  private readonly unhold: () => void;

  constructor(
    private readonly stream: DataStream,
    private readonly o: ReceiveOptions,
  ) {
    // The budget may ask any holder to write what it holds (data-budget.ts room()).
    this.unhold = o.budget.hold(this.flush);
  }

  listen(resolve: (r: Received) => void, reject: (err: Error) => void): void {
    this.stream.on("data", (chunk: Buffer) => this.take(chunk));
    this.stream.once("end", () => this.end(resolve));
    // The client went away before the final dot (smtp-server destroys the stream, with an error
    // when someone listens for one): nothing of it may stay.
    const gone = (err?: Error) => this.gone(reject, err);
    this.stream.once("error", gone);
    this.stream.once("close", () => gone());
  }

  private take(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.total > this.o.maxBytes || this.error) return void this.drop();
    this.hash.update(chunk);
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    this.o.budget.take(chunk.length);
    if (this.pendingBytes >= this.o.chunkBytes || this.o.budget.exhausted) this.flush();
  }

  private drop(): void {
    this.o.budget.release(this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** Takes what is pending out of memory: its bytes, which the caller now holds of the budget. */
  private takePending(): { bytes: Buffer; held: number } {
    const bytes = Buffer.concat(this.pending, this.pendingBytes);
    const held = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    return { bytes, held };
  }

  /** Writes the pending bytes as the next slice, the stream paused until it is written. */
  private readonly flush = (): void => {
    if (this.busy || this.pendingBytes === 0) return;
    this.busy = true;
    const { bytes, held } = this.takePending();
    const seq = this.staged++;
    this.stream.pause();
    this.writing = this.o.db
      .query(`INSERT INTO spool_chunks ("uploadId", seq, data) VALUES ($1, $2, $3)`, [this.spoolId, seq, bytes])
      .then(
        () => undefined,
        (err: Error) => {
          this.error ??= err;
        },
      )
      .then(() => this.afterWrite(held));
  };

  /** A slice is written (or failed): the next one if it filled meanwhile, else read on once the budget has room. */
  private async afterWrite(held: number): Promise<void> {
    this.o.budget.release(held);
    this.busy = false;
    if (this.error) this.drop();
    else if (this.pendingBytes >= this.o.chunkBytes) return this.flush();
    await this.o.budget.room();
    this.stream.resume();
  }

  /** Waits for the write in flight, and for one it chained when the slice filled again meanwhile. */
  private async settle(): Promise<void> {
    for (let w = this.writing; ; w = this.writing) {
      await w;
      if (w === this.writing) return;
    }
  }

  private async discard(): Promise<void> {
    this.drop();
    await this.settle();
    if (this.staged) {
      await this.o.db.query(`DELETE FROM spool_chunks WHERE "uploadId" = $1`, [this.spoolId]).catch(() => undefined);
    }
  }

  private end(resolve: (r: Received) => void): void {
    this.settled = true;
    this.unhold();
    void this.settle().then(async () => {
      if (this.stream.sizeExceeded || this.total > this.o.maxBytes) {
        await this.discard();
        return resolve({ kind: "too-big" });
      }
      if (this.error) {
        const error = this.error;
        await this.discard();
        return resolve({ kind: "failed", error });
      }
      resolve({ kind: "ok", body: this.body() });
    });
  }

  /** The received message: the staged slices and the tail, whose bytes stay held until release(). */
  private body(): ReceivedBody {
    const { bytes, held } = this.takePending();
    const budget = this.o.budget;
    let released = false;
    return {
      spoolId: this.spoolId,
      staged: this.staged,
      tail: bytes,
      size: this.total,
      sha256: this.hash.digest("hex"),
      release: () => {
        if (!released) budget.release(held);
        released = true;
      },
    };
  }

  private gone(reject: (err: Error) => void, err?: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.unhold();
    void this.discard().then(() => reject(err ?? new Error("connection closed during DATA")));
  }
}

/** How a server streams DATA: the budget shared by its connections and the slice size. */
export type DataOptions = { budget: DataBudget; chunkBytes: number };

/** For a server not given its own (main.ts passes the configured ones): one budget per process. */
export const defaultDataOptions = (): DataOptions => ({ budget: sharedDataBudget(), chunkBytes: 1024 * 1024 });
