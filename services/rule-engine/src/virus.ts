/**
 * The virus verdict (ClamAV through clamd, clamd.ts). Optional like the spam scanner: without
 * CLAMD_URL every message is GRAY "not configured" at the cost of a counter. A clamd that is down,
 * slow or answers an error never holds mail back: the verdict is GRAY with the reason, the failure
 * is logged (rate-limited, as every dependency's) and counted.
 */
import type { Logger } from "@mailroom/log";
import { Counter, dependencyErrors, type Registry } from "@mailroom/observability";
import { type ClamdAddress, ClamdError, clamdScan } from "./clamd.ts";
import type { Verdict } from "./verdicts.ts";

/** `signature` is ClamAV's name for what it found (FAIL only); `reason` says why, for the API and the timeline. */
export type VirusVerdict = { verdict: Verdict; signature: string | null; reason: string };

export type VirusScanner = (raw: Uint8Array) => Promise<VirusVerdict>;

export const VIRUS_NOT_CONFIGURED: VirusVerdict = { verdict: "GRAY", signature: null, reason: "clamd not configured" };

const OUTCOMES = ["clean", "infected", "not_configured", "timeout", "unavailable", "error", "skipped"] as const;
type Outcome = (typeof OUTCOMES)[number];

export type ClamdScannerOptions = {
  address: ClamdAddress;
  /** Deadline of one scan, from connecting to the answer. */
  timeoutMs: number;
  logger: Logger;
  /** `mailroom_virus_scans_total{outcome}`; absent: not counted. */
  registry?: Registry;
  /** After this many failures in a row clamd is not asked for `pauseMs` (default 3). */
  failuresBeforePause?: number;
  /** How long scans are skipped once clamd kept failing; then one message tries again (default 30 s). */
  pauseMs?: number;
  now?: () => number;
};

function scanCounter(registry: Registry | undefined): (outcome: Outcome) => void {
  if (!registry) return () => undefined;
  const counter = new Counter({
    name: "mailroom_virus_scans_total",
    help: "Virus scans by outcome: clean, infected, not_configured, or no verdict (timeout, unavailable, error, skipped: GRAY)",
    labelNames: ["outcome"],
    registers: [registry],
  });
  for (const outcome of OUTCOMES) counter.inc({ outcome }, 0);
  return (outcome) => counter.inc({ outcome });
}

/** No CLAMD_URL: a constant verdict, counted so that a dashboard shows mail going unscanned. */
export function unconfiguredVirusScanner(registry?: Registry): VirusScanner {
  const count = scanCounter(registry);
  return async () => {
    count("not_configured");
    return VIRUS_NOT_CONFIGURED;
  };
}

/**
 * Scans through clamd. Never throws. A clamd that keeps failing (down, or slower than the deadline)
 * is left alone for a pause, so a backlog does not wait out one deadline per message; the first
 * message after the pause tries again.
 */
export function createClamdScanner(opts: ClamdScannerOptions): VirusScanner {
  const count = scanCounter(opts.registry);
  const now = opts.now ?? Date.now;
  const failuresBeforePause = opts.failuresBeforePause ?? 3;
  const pauseMs = opts.pauseMs ?? 30_000;
  const errors = dependencyErrors(opts.logger);
  let failures = 0;
  let pausedUntil = 0;
  return async (raw) => {
    if (now() < pausedUntil) {
      count("skipped");
      return gray(`clamd not asked: ${failures} scans in a row failed, trying again after the pause`);
    }
    try {
      const answer = await clamdScan(opts.address, raw, opts.timeoutMs);
      if (failures > 0) errors.recovered("clamd");
      failures = 0;
      if ("found" in answer) {
        count("infected");
        return { verdict: "FAIL", signature: answer.found, reason: `clamd: ${answer.found} FOUND` };
      }
      count("clean");
      return { verdict: "PASS", signature: null, reason: "clamd: no signature matched" };
    } catch (err) {
      const e = err instanceof ClamdError ? err : new ClamdError("error", (err as Error).message);
      if (e.kind === "refused") {
        // clamd works; it refused this message (e.g. a stream longer than its StreamMaxLength).
        count("error");
        opts.logger.warn({ err: e.message, bytes: raw.byteLength }, "clamd refused to scan a message");
        return gray(e.message);
      }
      count(e.kind);
      errors.report("clamd", e, { kind: e.kind });
      if (++failures >= failuresBeforePause) pausedUntil = now() + pauseMs;
      return gray(e.message);
    }
  };
}

const gray = (reason: string): VirusVerdict => ({ verdict: "GRAY", signature: null, reason });
