/**
 * How long an account's mail is kept. New accounts get the installation's default
 * (DEFAULT_RETENTION_DAYS, read by the admin CLI that creates accounts and shown by the API);
 * members change their own account's in the console, operators with `admin accounts set-retention`.
 */

/** The default when DEFAULT_RETENTION_DAYS is unset (and the column's default). */
export const BUILTIN_RETENTION_DAYS = 30;
export const MAX_RETENTION_DAYS = 3650;

export const RETENTION_HINT = `a whole number of days from 1 to ${MAX_RETENTION_DAYS}, or "forever"`;

/** "forever" → null (kept forever); "1".."3650" → that many days; anything else → an error message. */
export function parseRetentionDays(text: string): { days: number | null } | { error: string } {
  const v = text.trim();
  if (v === "forever") return { days: null };
  const days = Number(v);
  if (!/^\d+$/.test(v) || days < 1 || days > MAX_RETENTION_DAYS) return { error: `must be ${RETENTION_HINT}` };
  return { days };
}
