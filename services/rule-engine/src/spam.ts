import type { Logger } from "@mailroom/log";
import type { Verdict } from "./verdicts.ts";

export type SpamVerdict = { verdict: Verdict; score: number | null };

export type SpamInput = {
  ip: string | null;
  helo: string | null;
  mailFrom: string;
  recipient: string;
  queueId: string;
};

export type SpamScanner = (raw: Uint8Array, input: SpamInput) => Promise<SpamVerdict>;

export type RspamdOptions = { url: string; timeoutMs?: number; password?: string };

/**
 * rspamd's HTTP scanning API (POST /checkv2, the normal worker, default port 11333). The verdict
 * follows the action rspamd chose with its own thresholds: `no action` → PASS; `add header`,
 * `rewrite subject`, `reject` → FAIL; `greylist` and `soft reject` (it wants to see the message
 * again) → GRAY. A scanner that cannot be reached throws; the caller records PROCESSING_FAILED.
 */
export function createRspamdScanner(opts: RspamdOptions): SpamScanner {
  const endpoint = new URL("/checkv2", opts.url);
  const timeoutMs = opts.timeoutMs ?? 15_000;
  return async (raw, input) => {
    const headers: Record<string, string> = {
      "content-type": "message/rfc822",
      "queue-id": input.queueId,
      rcpt: input.recipient,
    };
    if (input.ip) headers.ip = input.ip;
    if (input.helo) headers.helo = input.helo;
    if (input.mailFrom) headers.from = input.mailFrom;
    if (opts.password) headers.password = opts.password;
    const res = await fetch(endpoint, {
      method: "POST",
      headers,
      body: raw as Uint8Array<ArrayBuffer>,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) throw new Error(`rspamd answered ${res.status}`);
    const body = (await res.json()) as { action?: string; score?: number };
    return {
      verdict: verdictFor(body.action),
      score: typeof body.score === "number" ? body.score : null,
    };
  };
}

export function verdictFor(action: string | undefined): SpamVerdict["verdict"] {
  switch (action) {
    case "no action":
      return "PASS";
    case "add header":
    case "rewrite subject":
    case "reject":
      return "FAIL";
    case "greylist":
    case "soft reject":
      return "GRAY";
    default:
      return "PROCESSING_FAILED";
  }
}

/** Without a scanner the verdict is GRAY; a scanner that fails gives PROCESSING_FAILED, never a failed job. */
export async function scanSpam(
  scanner: SpamScanner | undefined,
  logger: Logger,
  raw: Uint8Array,
  input: SpamInput,
): Promise<SpamVerdict> {
  if (!scanner) return { verdict: "GRAY", score: null };
  try {
    return await scanner(raw, input);
  } catch (err) {
    logger.warn({ err: (err as Error).message }, "spam scan failed");
    return { verdict: "PROCESSING_FAILED", score: null };
  }
}
