/**
 * Imported DKIM public keys, kept by key record. mailauth parses the key record and imports the
 * key (base64, DER, `createPublicKey`, the export to PEM) for every signature of every message:
 * ~0.15–0.3 ms of the rule engine's main thread per message, 11 % of its busy time at saturation,
 * for a handful of senders' keys that are the same all day.
 *
 * mailauth has no option for it: each DkimVerifier makes a per-message key cache (`keyCache`, one
 * lookup per key record per message) in its constructor. This installs an accessor for that one
 * property on DkimVerifier's prototype, so every verifier's per-message cache is wrapped: the key
 * record is still resolved for every message through the resolver mailauth was given (ours caches
 * by the record's TTL, so a rotated or revoked key is seen when its TTL runs out, as before), and
 * only the import of a record seen before is reused. The import is a function of the record text
 * and the lookup's options alone, so the result, or the error (a revoked key, a short RSA key), is
 * exactly what mailauth would compute again. At most `MAX_KEYS` records are kept, least recently
 * used evicted first.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

type KeyOptions = { strict?: boolean; hashAlgo?: string };
type Resolver = (name: string, rrtype: string) => Promise<unknown>;
type KeyLookup = (
  type: string,
  name: string,
  minBitLength: number | undefined,
  options?: KeyOptions,
) => Promise<unknown>;
type KeyCache = { resolver: Resolver; get: KeyLookup };
type Tools = {
  getPublicKey(
    type: string,
    name: string,
    minBitLength: number | undefined,
    resolver: Resolver,
    o?: KeyOptions,
  ): Promise<unknown>;
  toALabel(name: string): string;
};

const MAX_KEYS = 2_000;
const imported = new Map<string, Promise<unknown>>(); // insertion order = recency order
let imports = 0;
const OWN = Symbol("mailroom per-message key cache");
let installed = false;

/** Idempotent; called where verdicts are computed (verdicts.ts). */
export function cacheImportedDkimKeys(): void {
  if (installed) return;
  const { DkimVerifier } = require("mailauth/lib/dkim/dkim-verifier.js") as { DkimVerifier: { prototype: object } };
  const tools = require("mailauth/lib/tools.js") as Tools;
  Object.defineProperty(DkimVerifier.prototype, "keyCache", {
    configurable: true,
    get(this: Record<symbol, KeyCache>) {
      return this[OWN];
    },
    set(this: Record<symbol, KeyCache>, perMessage: KeyCache) {
      this[OWN] = { resolver: perMessage.resolver, get: lookupOnce(perMessage.resolver, tools) };
    },
  });
  installed = true;
}

/** Imports a key record seen before from the process-wide map; the same question twice in one message is asked once. */
function lookupOnce(resolver: Resolver, tools: Tools): KeyLookup {
  const asked = new Map<string, Promise<unknown>>();
  return (type, name, minBitLength, options = {}) => {
    const question = [!!options.strict, minBitLength ?? "", options.hashAlgo ?? "", name].join(":");
    let answer = asked.get(question);
    if (!answer) {
      answer = importOf(resolver, tools, type, name, minBitLength, options);
      // A lookup can fail before anything awaits it; every caller that awaits still gets the error.
      answer.catch(() => false);
      asked.set(question, answer);
    }
    return answer;
  };
}

async function importOf(
  resolver: Resolver,
  tools: Tools,
  type: string,
  name: string,
  minBitLength: number | undefined,
  options: KeyOptions,
): Promise<unknown> {
  // As mailauth's getPublicKey reads it: the first TXT record's strings joined, whitespace removed.
  const list = (await resolver(tools.toALabel(name), "TXT")) as unknown[][] | undefined;
  const record = list
    ? ([] as unknown[])
        .concat(list[0] ?? [])
        .join("")
        .replace(/\s+/g, "")
    : "";
  const key = [type, !!options.strict, minBitLength ?? "", options.hashAlgo ?? "", record].join(":");
  let result = imported.get(key);
  if (result) imported.delete(key);
  else {
    result = tools.getPublicKey(type, name, minBitLength, async () => list, options);
    imports++;
    result.catch(() => false);
  }
  imported.set(key, result);
  if (imported.size > MAX_KEYS) imported.delete(imported.keys().next().value as string);
  return result;
}

/** For tests: key records imported so far, and how many are kept. */
export const dkimKeyImports = (): { imports: number; kept: number } => ({ imports, kept: imported.size });
