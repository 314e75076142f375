// Contenders measured in the same run, round after round (A B C, B C A, …), so that a change in the
// machine's load hits all of them alike; the figure kept is each contender's median over the rounds.
import { median } from "./stats.ts";

export type Trial<R> = { name: string; run: () => Promise<R> };

export async function interleave<R>(
  rounds: number,
  trials: Trial<R>[],
  progress: (name: string, round: number, r: R) => void = () => {},
): Promise<Map<string, R[]>> {
  const out = new Map<string, R[]>(trials.map((t) => [t.name, []]));
  for (let round = 0; round < rounds; round++) {
    // Rotate the order each round: no contender always runs first (cold) or last (warm, or after a hog).
    const order = trials.map((_, i) => trials[(i + round) % trials.length] as Trial<R>);
    for (const t of order) {
      const r = await t.run();
      out.get(t.name)?.push(r);
      progress(t.name, round, r);
    }
  }
  return out;
}

/** The median of one numeric field over a contender's rounds. */
export const medianOf = <R>(results: R[] | undefined, pick: (r: R) => number): number =>
  median((results ?? []).map(pick));
