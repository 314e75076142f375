import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Id prefixes: the spec's, plus our own for resources it does not name. */
export const ID_PREFIX = {
  account: "acc",
  apiKey: "key",
  domain: "dom",
  address: "addr",
  endpoint: "ep",
  email: "em",
  thread: "thr",
  shieldRule: "gr",
  block: "blk",
  spool: "spl",
  spoolRecipient: "rcp",
  attachment: "att",
  delivery: "dlv",
  deliveryAttempt: "dat",
  member: "mem",
  memberToken: "mtk",
  consoleSession: "ses",
} as const;

export type IdKind = keyof typeof ID_PREFIX;

/** Random base62 body (22 chars ≈ 131 bits) behind the kind's prefix, e.g. `em_3kTq…`. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIX[kind]}_${randomBase62(22)}`;
}

export function randomBase62(length: number): string {
  // Rejection sampling keeps every character equally likely (256 is not a multiple of 62).
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}
