/**
 * The `parse and judge` step of processRecipient: the message parsed off the event loop, its
 * SPF/DKIM/DMARC/ARC verdicts, spam verdict and virus verdict (in parallel), and its text made
 * storable. A message the parser refuses, or one past its processing budget, is judged from its raw
 * bytes: a few headers, every verdict PROCESSING_FAILED.
 */
import { createHash } from "node:crypto";
import { type ProcessDeps, type ProcessOptions, traced } from "./deps.ts";
import type { LoadedRecipient } from "./load.ts";
import { generatedMessageId, type ParsedEmail } from "./parse.ts";
import { sanitizeForPostgres } from "./sanitize.ts";
import { type SpamVerdict, scanSpam } from "./spam.ts";
import { AUTH_NOT_VERIFIED, type AuthVerdicts, authVerdicts } from "./verdicts.ts";
import { VIRUS_NOT_CONFIGURED, type VirusVerdict } from "./virus.ts";

export type Judged = {
  /** Cleaned for Postgres: everything after this step sees these values. */
  email: ParsedEmail;
  /** Fields whose characters Postgres cannot store were replaced (sanitize.ts). */
  sanitized: string[];
  auth: AuthVerdicts;
  spam: SpamVerdict;
  virus: VirusVerdict;
  /** False: stored raw, nothing about it verified. */
  parsed: boolean;
  contentHash: string;
};

export async function parseAndJudge(
  deps: ProcessDeps,
  rcpt: LoadedRecipient,
  raw: Uint8Array,
  opts: ProcessOptions,
): Promise<Judged> {
  const judged = opts.failed
    ? unjudged(deps, rcpt, raw, "processing budget used up", opts.failed === "empty")
    : await judgeParsed(deps, rcpt, raw);
  // The one place where decoded text is made storable: everything below (shield rules, block
  // record, thread, Email row, attachment rows) sees the cleaned values.
  const { value: email, sanitized } = sanitizeForPostgres(judged.email);
  if (sanitized.length)
    deps.logger.info({ spoolRecipientId: rcpt.id, sanitized }, "replaced characters Postgres cannot store");
  return { ...judged, email, sanitized, contentHash: bodyHash(raw) };
}

type Verdicts = Omit<Judged, "sanitized" | "contentHash">;

async function judgeParsed(deps: ProcessDeps, rcpt: LoadedRecipient, raw: Uint8Array): Promise<Verdicts> {
  const parsed = await traced(deps, "parse", () => deps.parser.parse(raw, fallbackMessageId(deps, rcpt)));
  if (!parsed.ok) return unjudged(deps, rcpt, raw, parsed.reason, false);
  const meta = { ip: rcpt.spool.remoteIp, helo: rcpt.spool.helo, mailFrom: rcpt.spool.mailFrom };
  const sealers = deps.trustedArcSealers ? { trustedArcSealers: deps.trustedArcSealers } : {};
  const [auth, spam, virus] = await Promise.all([
    traced(deps, "auth", () => authVerdicts({ raw, ...meta, mta: deps.mtaHostname, ...sealers }, deps.resolver)),
    traced(deps, "spam", () =>
      scanSpam(deps.spam, deps.logger, raw, { ...meta, recipient: rcpt.recipient, queueId: rcpt.spoolId }),
    ),
    deps.virus
      ? traced(deps, "virus", () => (deps.virus as NonNullable<typeof deps.virus>)(raw))
      : VIRUS_NOT_CONFIGURED,
  ]);
  if (virus.verdict === "FAIL")
    deps.logger.info({ spoolRecipientId: rcpt.id, signature: virus.signature }, "virus found");
  return { email: parsed.email, auth, spam, virus, parsed: true };
}

/** The Message-ID of a message that has none (parse.ts generatedMessageId). */
const fallbackMessageId = (deps: ProcessDeps, rcpt: LoadedRecipient) =>
  generatedMessageId(rcpt.spool.sha256, deps.mtaHostname);

/** Kept as raw (GET /emails/{id}/raw) and marked: nothing about it could be verified. */
function unjudged(deps: ProcessDeps, rcpt: LoadedRecipient, raw: Uint8Array, reason: string, empty: boolean): Verdicts {
  deps.logger.warn({ spoolRecipientId: rcpt.id, reason }, "message could not be parsed; storing raw");
  return {
    email: unparsedEmail(raw, rcpt.spool.mailFrom, fallbackMessageId(deps, rcpt), empty),
    auth: AUTH_NOT_VERIFIED,
    spam: { verdict: "PROCESSING_FAILED", score: null },
    virus: { verdict: "PROCESSING_FAILED", signature: null, reason: `not scanned: ${reason}` },
    parsed: false,
  };
}

/** The SHA-256 of the body (everything after the header block): trace headers added by relays differ. */
export function bodyHash(raw: Uint8Array): string {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  const cut = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : buf.length;
  return createHash("sha256").update(buf.subarray(cut)).digest("hex");
}

/**
 * Best effort for a message the parser refused (or one that could not be processed at all): a few
 * raw header values from the first 64 KB, or (`empty`) none, only what the envelope says.
 */
function unparsedEmail(raw: Uint8Array, envelopeFrom: string, fallbackId: string, empty: boolean): ParsedEmail {
  const head = empty
    ? ""
    : Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.byteLength, 65_536)).toString("latin1");
  const end = head.search(/\r?\n\r?\n/);
  const unfolded = (end >= 0 ? head.slice(0, end) : head).replace(/\r?\n[ \t]+/g, " ");
  const header = (name: string) =>
    new RegExp(`^${name}:[ \\t]*(.*)$`, "im").exec(unfolded)?.[1]?.trim().slice(0, 998) ?? null;
  const messageId = header("Message-ID");
  return {
    messageId: messageId ?? fallbackId,
    messageIdPresent: Boolean(messageId),
    inReplyTo: null,
    references: [],
    fromAddress: envelopeFrom.toLowerCase(),
    fromName: null,
    toAddresses: [],
    ccAddresses: [],
    replyTo: [],
    subject: header("Subject") ?? "",
    textBody: "",
    strippedText: "",
    htmlBody: "",
    headers: [],
    attachments: [],
  };
}
