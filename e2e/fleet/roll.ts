// A rolling restart of every fleet service under load, as the test and bench/replicas.ts run it.
import { performance } from "node:perf_hooks";
import { FLEET_SERVICES, type Fleet, type FleetService, type Replica, type Stopped } from "./fleet.ts";
import type { Load } from "./load.ts";
import { type Outcome, sendMessage } from "./smtp.ts";

export type Rolled = {
  stopped: Stopped[];
  /** The uploads begun on each ingest replica just before its SIGTERM. */
  uploads: Outcome[];
  /** Every session of the run: the load's and the uploads. */
  outcomes: Outcome[];
  /** performance.now() at the first replica started and the last one stopped. */
  window: [number, number];
  /** The same per service, in the order they were rolled. */
  phases: { service: FleetService; window: [number, number] }[];
};

/**
 * Replaces every replica of smtp-ingest, then rule-engine, then webhook-dispatcher, one by one, and
 * stops the load. On each ingest replica about to stop, an upload that has just begun its DATA
 * (paced over `upload.paceMs`) is in progress at its SIGTERM.
 */
export async function rollUnderLoad(
  fleet: Fleet,
  load: Load,
  upload: { to: string; bytes: number; paceMs: number; tag?: string },
): Promise<Rolled> {
  const uploads: Promise<Outcome>[] = [];
  const uploadOn = (old: Replica) =>
    new Promise<void>((started) => {
      const m = {
        tag: `${upload.tag ?? "upload"}-${uploads.length}`,
        to: upload.to,
        bytes: upload.bytes,
        big: true,
        paceMs: upload.paceMs,
      };
      uploads.push(sendMessage(old.smtpPort ?? 0, m, started).finally(started));
    });
  const start = performance.now();
  const stopped: Stopped[] = [];
  const phases: Rolled["phases"] = [];
  for (const service of FLEET_SERVICES) {
    const from = performance.now();
    stopped.push(...(await fleet.roll(service, service === "smtp-ingest" ? uploadOn : undefined)));
    phases.push({ service, window: [from, performance.now()] });
  }
  const end = performance.now();
  const done = await Promise.all(uploads);
  return { stopped, uploads: done, outcomes: [...(await load.stop()), ...done], window: [start, end], phases };
}
