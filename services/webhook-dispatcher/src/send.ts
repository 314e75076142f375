import { type AddressResolver, guardedRequest } from "@mailroom/egress";
import type { Send } from "./dispatch.ts";

/** Real HTTP through the SSRF guard: resolve, check every address, connect to the checked one, no redirects. */
export function createSender(opts: { allowPrivate: boolean; resolver: AddressResolver }): Send {
  return (req) =>
    guardedRequest({
      url: req.url,
      body: req.body,
      headers: req.headers,
      timeoutMs: req.timeoutMs,
      resolver: opts.resolver,
      allowPrivate: opts.allowPrivate,
    });
}
