import { createHash, randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";

/**
 * Console members' secrets (issue 17): password hashes, one-time set-password tokens and session
 * tokens. Pure crypto, no I/O, shared by the API (sign-in) and the admin CLI (members create).
 */

/** scrypt cost: N=2^15, r=8 (OWASP's minimum for scrypt), p=1; ~32 MB and tens of ms per hash. */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;

export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 200;

/** A set-password link is good for 24 hours and one use. */
export const SET_PASSWORD_TTL_MS = 24 * 60 * 60 * 1000;

function derive(password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: 256 * o.N * o.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFC"), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export type ScryptCost = { N: number; r: number; p: number };

/**
 * `scrypt$N$r$p$salt$hash` (base64url): the parameters travel with the hash, so they can be raised
 * later. `cost` is for test fixtures only (a member a browser test signs in as); members always get
 * the default.
 */
export async function hashPassword(password: string, cost: ScryptCost = SCRYPT): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost);
  return ["scrypt", cost.N, cost.r, cost.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/** Timing-safe check; a malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash] = stored.split("$");
  if (alg !== "scrypt" || !salt || !hash) return false;
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  if (![params.N, params.r, params.p].every((v) => Number.isInteger(v) && v > 0)) return false;
  const expected = Buffer.from(hash, "base64url");
  const given = await derive(password, Buffer.from(salt, "base64url"), params);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Checked when an email is unknown (or has no password yet), so that answer costs the same time as
 * a wrong password and does not tell an attacker which emails are members.
 */
export const DUMMY_PASSWORD_HASH =
  "scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/** 32 random bytes, base64url: set-password tokens and session cookies. */
export const newSecretToken = (): string => randomBytes(32).toString("base64url");

/** What the database keeps of a token: its SHA-256, so a database reader cannot use it. */
export const hashSecretToken = (token: string): string => createHash("sha256").update(token).digest("hex");

/**
 * Console sign-in failures are counted per typed email and client address (the API's lockout),
 * and the database keeps only these hashes of them: the typed "email" may be a password typed in
 * the wrong field. `signInEmailHash` lets a password reset (admin CLI) lift every lock of an email.
 */
export const signInEmailHash = (email: string): string =>
  createHash("sha256").update(`mailroom-sign-in\0${email}`).digest("hex");
export const signInFailureKey = (email: string, addressGroup: string): string =>
  createHash("sha256").update(`mailroom-sign-in\0${email}\0${addressGroup}`).digest("hex");

/** Failures allowed before the first lockout; each further failure doubles it, up to the cap. */
export const SIGN_IN_FREE_FAILURES = 4;
const LOCKOUT_BASE_MS = 60_000;
const LOCKOUT_MAX_MS = 60 * 60_000;

/** How long a member is locked out after `failures` consecutive failed sign-ins (0: not locked). */
export function lockoutMs(failures: number): number {
  if (failures <= SIGN_IN_FREE_FAILURES) return 0;
  return Math.min(LOCKOUT_MAX_MS, LOCKOUT_BASE_MS * 2 ** (failures - SIGN_IN_FREE_FAILURES - 1));
}

/** The console page that reads the token from the URL fragment (never sent to a server or a log). */
export const setPasswordLink = (publicUrl: string, token: string): string =>
  `${publicUrl.replace(/\/+$/, "")}/console/set-password#token=${token}`;
