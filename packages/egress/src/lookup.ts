import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { classifyAddress, hostOf, isLocalhostName, validateEndpointUrl } from "@mailroom/core";

/** What the guard needs from DNS; `dns.promises.Resolver` fits (and is injected, never global). */
export type AddressResolver = {
  resolve4(host: string): Promise<string[]>;
  resolve6(host: string): Promise<string[]>;
};

export type GuardOptions = {
  resolver: AddressResolver;
  /** ALLOW_PRIVATE_DESTINATIONS: local development only (DESIGN §4). */
  allowPrivate?: boolean;
  /** Upper bound for the A + AAAA lookups together. */
  lookupTimeoutMs?: number;
};

export const DEFAULT_LOOKUP_TIMEOUT_MS = 5_000;
export const NON_PUBLIC_CODE = "ERR_NON_PUBLIC_ADDRESS";

export class NonPublicAddressError extends Error {
  readonly code = NON_PUBLIC_CODE;
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(`non-public URL: ${host === address ? address : `${host} resolves to ${address}`}: ${reason}`);
    this.name = "NonPublicAddressError";
  }
}

/**
 * Resolves a host and checks every address. One bad address refuses the host: an attacker who
 * controls DNS could otherwise mix a public and a private record and hope for the private one.
 * IP literals are judged as they are; `localhost` names are loopback without asking DNS.
 */
export async function resolveChecked(rawHost: string, opts: GuardOptions): Promise<string[]> {
  const host = rawHost
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
    .toLowerCase();
  const addresses = isIP(host)
    ? [host]
    : isLocalhostName(host)
      ? ["127.0.0.1", "::1"]
      : await withTimeout(resolveBoth(host, opts.resolver), opts.lookupTimeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS, host);
  if (!opts.allowPrivate) {
    for (const address of addresses) {
      const verdict = classifyAddress(address);
      if (!verdict.public) throw new NonPublicAddressError(host, address, verdict.reason);
    }
  }
  return addresses;
}

async function resolveBoth(host: string, resolver: AddressResolver): Promise<string[]> {
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
  const addresses = [...(v4.status === "fulfilled" ? v4.value : []), ...(v6.status === "fulfilled" ? v6.value : [])];
  if (addresses.length > 0) return addresses;
  // Neither family answered: report the A failure (the one users can usually act on).
  const failure = v4.status === "rejected" ? v4.reason : v6.status === "rejected" ? v6.reason : undefined;
  throw failure instanceof Error ? failure : errno("ENOTFOUND", `no addresses for ${host}`);
}

function withTimeout<T>(work: Promise<T>, ms: number, host: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    // The shared resolver is not cancelled: that would abort other callers' queries too.
    timer = setTimeout(() => reject(errno("ETIMEOUT", `DNS lookup of ${host} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/**
 * A drop-in for `dns.lookup` (http.request's `lookup`, got's `dnsLookup`). The socket connects to
 * exactly the addresses checked here, so a DNS answer that changes between check and connect (DNS
 * rebinding) cannot redirect the request. Two gaps the caller must close (guardedRequest does):
 * Node skips `lookup` for IP-literal hosts, so run `validateEndpointUrl` first; and a keep-alive
 * agent reuses pooled sockets without any lookup, so use an agent that does not pool, or one keyed
 * by the checked addresses (pool.ts).
 */
export function createGuardedLookup(opts: GuardOptions): LookupFunction {
  return (hostname, options, callback) => {
    resolveChecked(hostname, opts).then(
      (addresses) => fixedLookup(addresses)(hostname, options, callback),
      (err: NodeJS.ErrnoException) => {
        const all = typeof options === "object" && options !== null && options.all;
        callback(err, all ? [] : "");
      },
    );
  };
}

/**
 * A `dns.lookup` that answers with `addresses` (already checked by `resolveChecked`) whatever the
 * host: a connection made with it can only reach those addresses.
 */
export function fixedLookup(addresses: readonly string[]): LookupFunction {
  return (hostname, options, callback) => {
    const o: LookupOptions = typeof options === "object" && options !== null ? options : {};
    const family = o.family === "IPv4" ? 4 : o.family === "IPv6" ? 6 : (o.family ?? 0);
    let list: LookupAddress[] = addresses
      .map((address) => ({ address, family: isIP(address) }))
      .filter((a) => family === 0 || a.family === family);
    if (o.order === "ipv6first") list = [...list].sort((a, b) => b.family - a.family);
    else if (o.order !== "verbatim") list = [...list].sort((a, b) => a.family - b.family);
    const [first] = list;
    if (!first) return callback(errno("ENOTFOUND", `no IPv${family} address for ${hostname}`), o.all ? [] : "");
    if (o.all) callback(null, list);
    else callback(null, first.address, first.family);
  };
}

export type UrlCheckResult = { ok: true; addresses: string[] } | { ok: false; error: string };

/** Endpoint create/update: URL rules, then the host must resolve to public addresses only. */
export async function checkUrl(url: string, opts: GuardOptions): Promise<UrlCheckResult> {
  const valid = validateEndpointUrl(url, { allowPrivate: opts.allowPrivate ?? false });
  if (!valid.ok) return valid;
  const host = hostOf(valid.url);
  try {
    return { ok: true, addresses: await resolveChecked(host, opts) };
  } catch (err) {
    if (err instanceof NonPublicAddressError) return { ok: false, error: err.message };
    const e = err as NodeJS.ErrnoException;
    return { ok: false, error: `could not resolve ${host}: ${e.code ?? e.message}` };
  }
}
