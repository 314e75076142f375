/**
 * The process-wide allowance of DATA bytes held in memory across all connections (issue 12). Each
 * connection counts what it holds until the bytes are in Postgres. When the allowance is used up a
 * connection writes what it has at once and then stops reading its socket until the allowance has
 * room again: senders are slowed down rather than buffered. Nothing here refuses mail.
 */
export class DataBudget {
  private held = 0;
  private highest = 0;
  private waiting: (() => void)[] = [];
  private holders = new Set<() => void>();
  /** How many times a connection had to wait for room (for tests and logs). */
  waits = 0;

  constructor(readonly limitBytes: number) {
    if (!(limitBytes > 0)) throw new Error("the DATA memory budget must be positive");
  }

  /** Bytes of DATA held in memory right now, across connections (a gauge). */
  get heldBytes(): number {
    return this.held;
  }

  /** The highest heldBytes seen since the start (or the last resetPeak). */
  get peakBytes(): number {
    return this.highest;
  }

  resetPeak(): void {
    this.highest = this.held;
  }

  get exhausted(): boolean {
    return this.held >= this.limitBytes;
  }

  take(bytes: number): void {
    this.held += bytes;
    if (this.held > this.highest) this.highest = this.held;
  }

  release(bytes: number): void {
    this.held -= bytes;
    // Every waiter goes back to reading once there is room; whoever overshoots again writes what it
    // holds and waits again, so the overshoot is at most one socket read per connection.
    if (!this.exhausted) for (const wake of this.waiting.splice(0)) wake();
  }

  /** Resolves once the budget has room (at once if it has). */
  room(): Promise<void> {
    if (!this.exhausted) return Promise.resolve();
    this.waits++;
    const wait = new Promise<void>((resolve) => this.waiting.push(resolve));
    // Bytes held by a connection whose client has gone quiet would never come back on their own:
    // ask every holder to write what it holds, so the room is made by writes that finish.
    for (const flush of this.holders) flush();
    return wait;
  }

  /** A connection that holds bytes; `flush` writes them out (and releases them when written). */
  hold(flush: () => void): () => void {
    this.holders.add(flush);
    return () => this.holders.delete(flush);
  }
}

/** Defaults for a process that was not given its own settings (main.ts passes the configured ones). */
let shared: DataBudget | undefined;
export const sharedDataBudget = (limitBytes = 64 * 1024 * 1024): DataBudget => {
  shared ??= new DataBudget(limitBytes);
  return shared;
};
