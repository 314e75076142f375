import { type AddressResolver, type ConnectionPool, guardedRequest } from "@mailroom/egress";
import type { Send } from "./dispatch.ts";

/**
 * Real HTTP through the SSRF guard: resolve, check every address, connect to a checked one, no
 * redirects. With `pool`, connections are kept alive per endpoint and checked address set.
 */
export function createSender(opts: { allowPrivate: boolean; resolver: AddressResolver; pool?: ConnectionPool }): Send {
  return (req) =>
    guardedRequest({
      url: req.url,
      body: req.body,
      headers: req.headers,
      timeoutMs: req.timeoutMs,
      resolver: opts.resolver,
      allowPrivate: opts.allowPrivate,
      ...(opts.pool ? { pool: opts.pool } : {}),
    });
}
