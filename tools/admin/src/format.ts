/**
 * Human output of the admin CLI: a list as an aligned table, one object as `key  value` lines.
 * `--json` bypasses this entirely (one JSON document on stdout, for scripts).
 */
const cell = (v: unknown): string => {
  if (v === null || v === undefined) return "-";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
};

export function table(rows: readonly Record<string, unknown>[]): string {
  if (rows.length === 0) return "(none)";
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => (row[i] as string).length)));
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i] as number))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join("\n");
}

export function record(value: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(value).map((k) => k.length));
  return Object.entries(value)
    .map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`)
    .join("\n");
}
