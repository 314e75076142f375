import { promises as dns } from "node:dns";
import { checkUrl } from "@mailroom/egress";

/** The SSRF check at endpoint create/update: resolve the host, refuse any non-public address. */
export function createDestinationCheck(opts: {
  allowPrivate: boolean;
  resolver?: Pick<dns.Resolver, "resolve4" | "resolve6">;
}) {
  const resolver = opts.resolver ?? new dns.Resolver({ timeout: 3_000, tries: 2 });
  return async (url: string) => {
    const r = await checkUrl(url, { resolver, allowPrivate: opts.allowPrivate });
    return r.ok ? ({ ok: true } as const) : ({ ok: false, error: r.error } as const);
  };
}
