/** ISO 8601 UTC with milliseconds, the spec's timestamp format. */
export const iso = (d: Date): string => d.toISOString();
export const isoOrNull = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
