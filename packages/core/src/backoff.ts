/** Spec §6.3: retries after 1 m, 5 m, 30 m, 2 h, then every 2 h — in units of `unitMs` (a minute in production). */
const SCHEDULE_MINUTES = [1, 5, 30, 120] as const;

/** Delay before attempt `failedAttempt + 1`, given that attempt number `failedAttempt` (1-based) just failed. */
export function retryDelayMs(failedAttempt: number, unitMs = 60_000): number {
  const minutes = SCHEDULE_MINUTES[Math.min(failedAttempt, SCHEDULE_MINUTES.length) - 1] ?? 120;
  return minutes * unitMs;
}
