import { createHash } from "node:crypto";
import { randomBase62 } from "./ids.ts";

/**
 * A new API key (spec §5.2): `svc_` + 43 base62 characters (~256 bits). Only `hash` (hex SHA-256)
 * and `prefix` are stored; `key` is shown once. Used by the admin CLI and the console alike.
 */
export function newApiKey(): { key: string; prefix: string; hash: string } {
  const key = `svc_${randomBase62(43)}`;
  return { key, prefix: key.slice(0, 12), hash: createHash("sha256").update(key).digest("hex") };
}

type ApiKeyRow = {
  id: string;
  name: string | null;
  prefix: string;
  scope: string | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  createdAt: Date;
};

/** A key as lists show it: never the key or its hash; the prefix is what a person recognises it by. */
export const apiKeyView = (k: ApiKeyRow) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  // Keys created before scopes existed (null) have full access (spec §5.7).
  scope: k.scope ?? "full",
  revokedAt: k.revokedAt?.toISOString() ?? null,
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
  createdAt: k.createdAt.toISOString(),
});
