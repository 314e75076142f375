import type { SpamInput, SpamVerdict } from "./process.ts";

export type RspamdOptions = { url: string; timeoutMs?: number; password?: string };

/**
 * rspamd's HTTP scanning API (POST /checkv2, the normal worker, default port 11333). The verdict
 * follows the action rspamd chose with its own thresholds: `no action` → PASS; `add header`,
 * `rewrite subject`, `reject` → FAIL; `greylist` and `soft reject` (it wants to see the message
 * again) → GRAY. A scanner that cannot be reached throws; the caller records PROCESSING_FAILED.
 */
export function createRspamdScanner(opts: RspamdOptions): (raw: Uint8Array, input: SpamInput) => Promise<SpamVerdict> {
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
