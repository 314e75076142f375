/**
 * Runs `work` until it succeeds or `deadlineMs` has passed, backing off from `firstDelayMs` up to
 * 5 s. For a worker that has done something it cannot take back (an HTTP POST, an SMTP hand-off)
 * and must now record it: a Postgres blip there must not become "do it all again", which is what
 * failing the job would mean. Gives up by throwing the last error.
 */
export async function retryFor<T>(
  work: () => Promise<T>,
  {
    deadlineMs = 120_000,
    firstDelayMs = 100,
    onRetry,
  }: { deadlineMs?: number; firstDelayMs?: number; onRetry?: (err: unknown, attempt: number) => void } = {},
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let delay = firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (Date.now() + delay > deadline) throw err;
      onRetry?.(err, attempt);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5_000);
    }
  }
}
