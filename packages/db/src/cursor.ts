import { createHmac, timingSafeEqual } from "node:crypto";

/** Position in a keyset ordered by (time desc, id desc). */
export type CursorPosition = { at: Date; id: string };

/**
 * Opaque, tamper-evident cursors: base64url of `<ms>.<id>.<mac>`, where the MAC is a truncated
 * HMAC-SHA256 under a server secret. A client can only hand back what we gave it.
 */
export function createCursorCodec(secret: string) {
  const mac = (payload: string) => createHmac("sha256", secret).update(payload).digest("base64url").slice(0, 16);
  return {
    encode(position: CursorPosition): string {
      const payload = `${position.at.getTime()}.${position.id}`;
      return Buffer.from(`${payload}.${mac(payload)}`).toString("base64url");
    },
    /** null for anything malformed or tampered with. */
    decode(cursor: string): CursorPosition | null {
      if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return null;
      const parts = Buffer.from(cursor, "base64url").toString("utf8").split(".");
      if (parts.length !== 3) return null;
      const [ms, id, tag] = parts as [string, string, string];
      const expected = Buffer.from(mac(`${ms}.${id}`));
      const given = Buffer.from(tag);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
      if (!/^\d{1,15}$/.test(ms) || !/^[a-z]+_[0-9A-Za-z]+$/.test(id)) return null;
      return { at: new Date(Number(ms)), id };
    },
  };
}

export type CursorCodec = ReturnType<typeof createCursorCodec>;
