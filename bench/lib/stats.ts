// Numbers the benches report: percentiles of latency samples and the median of per-round results.

/** The p-th percentile (nearest rank) of `xs`; NaN when there are none. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

export const median = (xs: readonly number[]): number => percentile(xs, 50);

export type Latency = { p50: number; p95: number; p99: number; max: number; n: number };

export function latency(xs: readonly number[]): Latency {
  return {
    p50: percentile(xs, 50),
    p95: percentile(xs, 95),
    p99: percentile(xs, 99),
    max: xs.length ? Math.max(...xs) : Number.NaN,
    n: xs.length,
  };
}

/** Parses `--name value` / `--name=value` / `--flag` from argv (the only CLI shape the benches use). */
export function flags(argv = process.argv.slice(2)): {
  num(name: string, def: number): number;
  has(name: string): boolean;
} {
  const get = (name: string): string | undefined => {
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i] as string;
      if (a === `--${name}`) return argv[i + 1] !== undefined && !argv[i + 1]?.startsWith("--") ? argv[i + 1] : "";
      if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
    }
    return undefined;
  };
  return {
    num(name, def) {
      const v = get(name);
      if (v === undefined || v === "") return def;
      const n = Number(v.replace(/_/g, ""));
      if (!Number.isFinite(n) || n <= 0)
        throw new Error(`--${name} must be a positive number, got ${JSON.stringify(v)}`);
      return n;
    },
    has: (name) => get(name) !== undefined,
  };
}
