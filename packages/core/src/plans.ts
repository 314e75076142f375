/**
 * Plans and what they allow. The one place these numbers live: the API (GET /account, the
 * shield-rule cap) and SMTP ingest (the monthly allotment at RCPT) both import them from here.
 * Defaults are documented in docs/decisions.md.
 */
export const PLANS = {
  // shieldRules: spec §8 (3 on Free, 200 on Scale; 402 beyond). monthlyAllotment: received messages
  // per calendar month, blocked mail included.
  free: { shieldRules: 3, monthlyAllotment: 3_000 },
  scale: { shieldRules: 200, monthlyAllotment: 1_000_000 },
} as const;

export type PlanName = keyof typeof PLANS;
export type PlanLimits = { shieldRules: number; monthlyAllotment: number };

export const PLAN_NAMES = Object.keys(PLANS) as PlanName[];

export const isPlanName = (value: unknown): value is PlanName =>
  typeof value === "string" && Object.hasOwn(PLANS, value);

/** Limits of a stored plan name; an unknown name (data from a newer version) gets the free plan's. */
export const planLimits = (plan: string): PlanLimits => (isPlanName(plan) ? PLANS[plan] : PLANS.free);

/** Usage counters are per calendar month in UTC: `YYYY-MM`. */
export const monthKey = (d: Date): string => d.toISOString().slice(0, 7);
