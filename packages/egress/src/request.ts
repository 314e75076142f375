import http from "node:http";
import https from "node:https";
import { performance } from "node:perf_hooks";
import { StringDecoder } from "node:string_decoder";
import { validateEndpointUrl } from "@mailroom/core";
import got from "got";
import { createGuardedLookup, type GuardOptions, NON_PUBLIC_CODE } from "./lookup.ts";

export const MAX_RESPONSE_BODY_BYTES = 4096;

export type GuardedRequestOptions = GuardOptions & {
  url: string;
  body: string | Buffer;
  headers?: Record<string, string>;
  /** For the whole exchange: lookup, connect, TLS, upload, response head and the body we read. */
  timeoutMs: number;
  method?: "POST" | "PUT";
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

  // Fresh agents without keep-alive: a pooled socket would outlive the check that opened it.
  const agent = { http: new http.Agent({ keepAlive: false }), https: new https.Agent({ keepAlive: false }) };
  try {
    const outcome = await send(valid.url, opts, agent);
    return { ...outcome, durationMs: elapsed() };
  } finally {
    agent.http.destroy();
    agent.https.destroy();
  }
}

type Agents = { http: http.Agent; https: https.Agent };

function send(url: URL, opts: GuardedRequestOptions, agent: Agents): Promise<Omit<GuardedResponse, "durationMs">> {
  return new Promise((resolve) => {
    let status: number | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;

    const stream = got.stream(url, {
      method: opts.method ?? "POST",
      body: opts.body,
      headers: { "content-type": "application/json", "user-agent": "mailroom-webhooks", ...opts.headers },
      dnsLookup: createGuardedLookup(opts),
      agent,
      followRedirect: false,
      throwHttpErrors: false,
      retry: { limit: 0 },
      timeout: { request: opts.timeoutMs },
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
    const backstop = setTimeout(() => finish("timeout"), opts.timeoutMs + 1_000);

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
