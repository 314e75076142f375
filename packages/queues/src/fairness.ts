/**
 * Fairness between accounts in the `inbound` queue, inside BullMQ OSS (no groups): every job
 * carries a BullMQ priority (lower runs first; equal priorities run in the order they were added).
 *
 * - A first try gets its account's recent volume: how many of the account's recipients this
 *   process queued lately, halved every `halfLifeMs`. An account's n-th recent recipient ranks with
 *   every other account's n-th, so a flood of 5,000 from one account queues at priorities 1…5,000
 *   and a quiet account's next message at 1: it waits for the jobs already running, not for the
 *   flood's backlog. Within an account the order stays first come, first served.
 * - A try that failed (and counted against the message's budget) is retried at RETRY_PRIORITY,
 *   after every first try: a backlog of poison messages using up their tries runs only when no
 *   first try is waiting.
 *
 * A priority is a hint about order only: nothing depends on it for correctness (the committed
 * spool row is the work item), so each process counting its own share is enough; with several
 * ingest replicas each one's counts are a sample of the same traffic.
 */

/** First tries rank 1…FIRST_TRY_PRIORITY_CAP (an account busier than that ranks at the cap). */
export const FIRST_TRY_PRIORITY_CAP = 1_000_000;
/** After every first try (BullMQ allows up to 2^21 − 1). */
export const RETRY_PRIORITY = 2_000_000;

export type AccountVolume = {
  /**
   * Counts `recipients` (default 1) of the account and returns the priority of the job that
   * carries them: the rank of its first recipient.
   */
  next(accountId: string, recipients?: number): number;
  /** Accounts currently tracked (for tests and the bound on memory). */
  size(): number;
};

type Count = { n: number; at: number };

/**
 * A decaying count of jobs per account. The half-life (10 s by default) sets how fast an account
 * that stopped sending ranks first again; a steady account's count settles at its rate × 14 s,
 * so an account sending 5 messages a second ranks behind at most ~70 of a flood's messages.
 * At most `maxAccounts` are kept: past that, accounts whose count has decayed below one are
 * forgotten (they would rank first anyway), and if all are busy the counts start over.
 */
export function accountVolume(
  opts: { halfLifeMs?: number; maxAccounts?: number; now?: () => number } = {},
): AccountVolume {
  const halfLifeMs = opts.halfLifeMs ?? 10_000;
  const maxAccounts = opts.maxAccounts ?? 10_000;
  const now = opts.now ?? Date.now;
  const counts = new Map<string, Count>();
  const decayed = (c: Count, t: number) => c.n * 2 ** (-(t - c.at) / halfLifeMs);

  const forgetIdle = (t: number) => {
    for (const [id, c] of counts) if (decayed(c, t) < 1) counts.delete(id);
    if (counts.size >= maxAccounts) counts.clear();
  };

  return {
    next(accountId, recipients = 1) {
      const t = now();
      const c = counts.get(accountId);
      const first = (c ? decayed(c, t) : 0) + 1;
      if (!c && counts.size >= maxAccounts) forgetIdle(t);
      counts.set(accountId, { n: first - 1 + recipients, at: t });
      return Math.min(FIRST_TRY_PRIORITY_CAP, Math.max(1, Math.round(first)));
    },
    size: () => counts.size,
  };
}
