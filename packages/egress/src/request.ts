import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { performance } from "node:perf_hooks";
import { StringDecoder } from "node:string_decoder";
import { hostOf, validateEndpointUrl } from "@mailroom/core";
import got from "got";
import {
  createGuardedLookup,
  DEFAULT_LOOKUP_TIMEOUT_MS,
  fixedLookup,
  type GuardOptions,
  NON_PUBLIC_CODE,
  resolveChecked,
} from "./lookup.ts";
import type { Agents, ConnectionPool } from "./pool.ts";

export const MAX_RESPONSE_BODY_BYTES = 4096;

export type GuardedRequestOptions = GuardOptions & {
  url: string;
  body: string | Buffer;
  headers?: Record<string, string>;
  /** For the whole exchange: lookup, connect, TLS, upload, response head and the body we read. */
  timeoutMs: number;
  method?: "POST" | "PUT";
  /**
   * Keep-alive connections keyed by the checked addresses (pool.ts). Without it every request opens
   * and closes its own connection.
   */
  pool?: ConnectionPool;
};

/**
 * One delivery attempt's outcome. `error` is null whenever a response arrived, whatever its status
 * (a 3xx is a response: redirects are never followed); otherwise one of `timeout`,
 * `unreachable: <code>`, `non-public URL: <reason>`.
 */
export type GuardedResponse = {
  status: number | null;
  body: string;
  durationMs: number;
  error: string | null;
};

/** POSTs through the SSRF guard. Never throws; every failure is a value. */
export async function guardedRequest(opts: GuardedRequestOptions): Promise<GuardedResponse> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const valid = validateEndpointUrl(opts.url, { allowPrivate: opts.allowPrivate ?? false });
  if (!valid.ok) {
    const error = valid.error.startsWith("non-public URL") ? valid.error : "unreachable: ERR_INVALID_URL";
    return { status: null, body: "", durationMs: elapsed(), error };
  }

  if (opts.pool) return pooled(valid.url, opts, opts.pool, started);

  // Fresh agents without keep-alive: a pooled socket would outlive the check that opened it.
  const agent = { http: new http.Agent({ keepAlive: false }), https: new https.Agent({ keepAlive: false }) };
  try {
    const outcome = await send(valid.url, opts, agent, createGuardedLookup(opts), opts.timeoutMs);
    return { ...outcome, durationMs: elapsed() };
  } finally {
    agent.http.destroy();
    agent.https.destroy();
  }
}

/**
 * The check runs first, at every request, and the request goes through the agents kept for exactly
 * the addresses it returned: a reused socket is connected to an address this check accepted, a new
 * one connects to one of them (fixedLookup). The deadline covers the lookup as before.
 */
async function pooled(url: URL, opts: GuardedRequestOptions, pool: ConnectionPool, started: number) {
  const elapsed = () => Math.round(performance.now() - started);
  const lookupMs = Math.min(opts.lookupTimeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS, opts.timeoutMs);
  let addresses: string[];
  try {
    addresses = await resolveChecked(hostOf(url), { ...opts, lookupTimeoutMs: lookupMs });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const error = e.code === "ETIMEOUT" && lookupMs === opts.timeoutMs ? "timeout" : describe(e);
    return { status: null, body: "", durationMs: elapsed(), error };
  }
  const agents = pool.agentsFor(url, addresses);
  try {
    const outcome = await send(url, opts, agents, fixedLookup(addresses), Math.max(1, opts.timeoutMs - elapsed()));
    return { ...outcome, durationMs: elapsed() };
  } finally {
    pool.release(url, addresses);
  }
}

function send(
  url: URL,
  opts: GuardedRequestOptions,
  agent: Agents,
  dnsLookup: LookupFunction,
  timeoutMs: number,
): Promise<Omit<GuardedResponse, "durationMs">> {
  return new Promise((resolve) => {
    let status: number | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;

    const stream = got.stream(url, {
      method: opts.method ?? "POST",
      body: opts.body,
      headers: { "content-type": "application/json", "user-agent": "mailroom-webhooks", ...opts.headers },
      dnsLookup,
      agent,
      followRedirect: false,
      throwHttpErrors: false,
      retry: { limit: 0 },
      timeout: { request: timeoutMs },
    });

    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(backstop);
      stream.destroy();
      // StringDecoder.write keeps an incomplete trailing UTF-8 sequence back instead of mangling it.
      const body = new StringDecoder("utf8").write(Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BODY_BYTES));
      resolve({ status, body, error });
    };
    // got enforces the timeout; this only guarantees that a bug there cannot hang a worker.
    const backstop = setTimeout(() => finish("timeout"), timeoutMs + 1_000);

    stream.on("response", (res: { statusCode: number }) => {
      status = res.statusCode;
    });
    stream.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= MAX_RESPONSE_BODY_BYTES) finish(null); // enough kept; drop the rest unread
    });
    stream.on("end", () => finish(null));
    stream.on("error", (err: Error) => finish(describe(err)));
  });
}

function describe(err: Error): string {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === NON_PUBLIC_CODE) return e.message;
    if (e.name === "TimeoutError") return "timeout";
  }
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ETIMEDOUT") return "timeout";
  return `unreachable: ${code ?? err.name}`;
}
