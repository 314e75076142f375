import { type AddressResolver, checkUrl } from "@mailroom/egress";

/**
 * The SSRF check at endpoint create/update: resolve the host, refuse any non-public address. The
 * resolver is the one `POST /endpoints/{id}/test` uses, built by main.ts with createEgressResolver
 * from DNS_SERVERS, as the dispatcher builds its own: there is no system-resolver default here.
 */
export function createDestinationCheck(opts: { allowPrivate: boolean; resolver: AddressResolver }) {
  return async (url: string) => {
    const r = await checkUrl(url, { resolver: opts.resolver, allowPrivate: opts.allowPrivate });
    return r.ok ? ({ ok: true } as const) : ({ ok: false, error: r.error } as const);
  };
}
