/**
 * Plans and what they allow. The one place these numbers live: the API (GET /account, the
 * shield-rule cap) and SMTP ingest (the monthly allotment at RCPT) both import them from here.
 * Defaults are documented in docs/decisions.md.
 */
/** No limit: every `count >= limit` check passes; views show it as `null`. */
export const UNLIMITED = Number.POSITIVE_INFINITY;

export const PLANS = {
  // An operator running mailroom for themselves: no rule cap, no allotment (usage is still counted).
  // Spec §8 leaves the caps of plans other than Free and Scale open.
  selfhosted: { shieldRules: UNLIMITED, monthlyAllotment: UNLIMITED },
  // shieldRules: spec §8 (3 on Free, 200 on Scale; 402 beyond). monthlyAllotment: received messages
  // per calendar month, blocked mail included. For operators who sell plans.
  free: { shieldRules: 3, monthlyAllotment: 3_000 },
  scale: { shieldRules: 200, monthlyAllotment: 1_000_000 },
} as const;

export type PlanName = keyof typeof PLANS;
export type PlanLimits = { shieldRules: number; monthlyAllotment: number };

/** What `admin accounts create` gives when no `--plan` is named: a self-hosted install's own accounts. */
export const DEFAULT_ADMIN_PLAN: PlanName = "selfhosted";

/** A limit for JSON: `null` when there is none. */
export const limitValue = (n: number): number | null => (Number.isFinite(n) ? n : null);

/** The way out of a plan limit, named in the 402 and 452 messages. */
export const PLAN_CHANGE_HINT =
  "an operator raises it with `admin accounts set-plan --account <id> --plan selfhosted|scale`";

export const PLAN_NAMES = Object.keys(PLANS) as PlanName[];

export const isPlanName = (value: unknown): value is PlanName =>
  typeof value === "string" && Object.hasOwn(PLANS, value);

/** Limits of a stored plan name; an unknown name (data from a newer version) gets the free plan's. */
export const planLimits = (plan: string): PlanLimits => (isPlanName(plan) ? PLANS[plan] : PLANS.free);

/** Usage counters are per calendar month in UTC: `YYYY-MM`. */
export const monthKey = (d: Date): string => d.toISOString().slice(0, 7);
