/** Monthly allotment of received messages per plan (blocked mail included). See docs/decisions.md. */
export const MONTHLY_ALLOTMENT: Record<string, number> = { free: 3_000, scale: 1_000_000 };

export const monthKey = (d: Date): string => d.toISOString().slice(0, 7);
