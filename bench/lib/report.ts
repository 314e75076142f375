// How every bench prints: the machine and its load (the machine may be shared), tables, ratios.
import { cpus, freemem, loadavg, totalmem } from "node:os";

export function machine(): string {
  const c = cpus();
  return `${c.length} × ${c[0]?.model.trim() ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM (${(freemem() / 2 ** 30).toFixed(1)} free), Node ${process.version}`;
}

export const load = (): string =>
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} on ${cpus().length} cores`;

/** Printed at the start and end of every bench, so a busy machine shows in the output. */
export function header(title: string, settings: string): void {
  console.log(`# ${title} — ${new Date().toISOString()}`);
  console.log(`machine: ${machine()}`);
  console.log(`${load()}`);
  console.log(`settings: ${settings}`);
}

export function footer(): void {
  console.log(`\n${load()} (at the end)`);
}

export function fmt(n: number, digits = 1): string {
  if (!Number.isFinite(n)) return "–";
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(digits);
}

export const ratio = (a: number, b: number): string =>
  Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : "–";

/** A Markdown table (so the output can be pasted into bench/README.md as it is). */
export function table(head: string[], rows: (string | number)[][]): void {
  const cells = [head, ...rows.map((r) => r.map((c) => (typeof c === "number" ? fmt(c) : c)))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? "").length)));
  const line = (r: (string | number)[]) => `| ${r.map((c, i) => String(c).padEnd(widths[i] as number)).join(" | ")} |`;
  console.log(line(cells[0] as string[]));
  console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
  for (const r of cells.slice(1)) console.log(line(r as string[]));
}
