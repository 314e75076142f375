/**
 * Reply-text stripping: the text a sender wrote in this message, without the quoted history its
 * client appended (or, bottom-posted, prepended) and without its signature. The rule engine's parse
 * worker imports this file directly (erasable TypeScript, no imports), like addresses.ts.
 *
 * Why our own and not email-reply-parser or planer (docs/decisions.md, "Reply-text stripping"):
 * both are regex lists run over whole lines or the whole text, and several of those regexes
 * backtrack polynomially (an 8 KB line takes email-reply-parser 6 s without the native re2 it
 * cannot install here), which a hostile message would turn into a parse timeout. Every test here
 * is linear: fixed-word prefixes and suffixes, a bounded look-ahead, and no pattern ever sees a
 * line longer than MAX_HEADER_CHARS. The word lists follow those libraries and talon.
 *
 * Lines are classified, then cut:
 * - `q` quoted (`>` first), `e` empty, `t` text;
 * - `h` an attribution ("On … wrote:", "Am … schrieb …:", "Le … a écrit :", "El … escribió:", …),
 *   one to three lines (clients wrap long ones), counted only when the next non-empty line is quoted;
 * - `b` the start of unquoted history: an Outlook header block (From:/Von:/De: followed by
 *   Sent:/Gesendet:/Envoyé:/Enviado: …), "-----Original Message-----", a forwarded-message marker.
 * Everything from the first `b` on goes; then a trailing run of quoted lines with its attribution;
 * a leading quote block goes only when nothing is quoted after the reply under it (bottom posting).
 * A reply written between quotes (inline) keeps its quotes, which give the answers their meaning.
 * The signature goes from the first "-- " line (RFC 3676 §4.3), and a trailing one-line mobile
 * signature ("Sent from my iPhone", "Von meinem iPhone gesendet", …).
 */

type Kind = "q" | "e" | "t" | "h" | "b";

/** Longer lines are never headers, signatures or separators: no pattern sees them. */
const MAX_HEADER_CHARS = 1_000;

const QUOTED = /^[ \t]*>/;
const BLANK = /^[ \t\u00a0]*$/;

/** Attribution verbs, as words; the line (joined if wrapped) must also end with a colon. */
const ATTRIBUTION_VERB =
  /(?:^|[\s,>)])(?:wrote|schrieb|a écrit|écrit|escribió|escribio|ha scritto|scrisse|escreveu|schreef|skrev|napisał\(a\)|napisała|napisał|pisze|kirjoitti|написал|написала|yazdı|写道)(?=[\s:：(]|$)/iu;
const ENDS_WITH_COLON = /[:：]$/;
/** How an attribution that a client wrapped over several lines begins. */
const ATTRIBUTION_OPENER = /^(?:On|Am|Le|El|Il|Em|Op|Den|På|W dniu|Dnia|Pe|Citando|Quoting)\s/;

const OUTLOOK_FROM = /^\*{0,2}(?:From|Von|De|Da|Van|Från|Fra|Od|Kimden|От)\*{0,2}\s?:/i;
const OUTLOOK_SENT =
  /^\*{0,2}(?:Sent|Date|Gesendet|Datum|Envoyé|Enviado|Fecha|Data|Inviato|Verzonden|Skickat|Sendt|Wysłano|Tarih|Отправлено)\*{0,2}\s?:/i;
const HISTORY_MARKER = new RegExp(
  "^(?:-{2,}\\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine|Mensaje original|Messaggio originale|" +
    "Mensagem original|Oorspronkelijk bericht|Originalmeddelande|Oprindelig besked|Opprinnelig melding|" +
    "Wiadomość oryginalna|Forwarded message|Weitergeleitete Nachricht|Message transféré|Mensaje reenviado|" +
    "Messaggio inoltrato|Mensagem encaminhada|Doorgestuurd bericht|Vidarebefordrat meddelande)\\s*-{2,}|" +
    "(?:Begin forwarded message|Anfang der weitergeleiteten Nachricht|Début du message réexpédié|" +
    "Inicio del mensaje reenviado|Inizio messaggio inoltrato)\\s?:)$",
  "i",
);
/** A rule line some clients put above the history (Outlook's row of underscores). */
const RULE_LINE = /^[ \t]*(?:_{8,}|-{8,})[ \t]*$/;
const MOBILE_SIGNATURE =
  /^(?:Sent from (?:my |Outlook|Mail|Yahoo)|Get Outlook for |Von meinem .{1,60} gesendet$|Gesendet von meinem |Gesendet mit |Envoyé de mon |Envoyé depuis |Envoyé à partir de |Enviado desde |Enviado do meu |Enviado de meu |Inviato da |Verzonden vanaf |Verstuurd vanaf |Skickat från |Sendt fra )/i;
/** A bare "--" starts a signature only this close to the end. */
const SHORT_SIGNATURE_LINES = 10;
/** How many lines an Outlook header block may run from From: to Sent:/Date:. */
const OUTLOOK_BLOCK_LINES = 6;

/** The reply without quoted history or signature; "" when the message holds nothing else. */
export function stripReply(text: string): string {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const kinds = classify(lines);
  let end = kinds.indexOf("b");
  if (end < 0) end = lines.length;
  end = withoutTrailingQuote(kinds, end);
  if (end < lines.length) end = backOverRule(lines, kinds, end);
  const start = afterLeadingQuote(kinds, end);
  end = signatureStart(lines, start, end);
  return lines
    .slice(start, end)
    .join("\n")
    .replace(/^(?:[ \t]*\n)+/, "")
    .trimEnd();
}

function classify(lines: string[]): Kind[] {
  const kinds: Kind[] = lines.map((l) => (BLANK.test(l) ? "e" : QUOTED.test(l) ? "q" : "t"));
  // For each line, the kind of the next non-empty line after it (one backward pass keeps this linear).
  const nextKind: (Kind | null)[] = new Array(lines.length).fill(null);
  for (let i = lines.length - 2, next: Kind | null = null; i >= 0; i--) {
    const k = kinds[i + 1] as Kind;
    if (k !== "e") next = k;
    nextKind[i] = next;
  }
  for (let i = 0; i < lines.length; i++) {
    if (kinds[i] !== "t") continue;
    const line = (lines[i] as string).trim();
    if (line.length > MAX_HEADER_CHARS) continue;
    if (HISTORY_MARKER.test(line) || isOutlookBlock(lines, i)) {
      kinds[i] = "b";
      break; // everything after it is history: nothing more to classify
    }
    const span = attributionSpan(lines, kinds, i);
    if (span > 0 && nextKind[i + span - 1] === "q") {
      for (let k = i; k < i + span; k++) kinds[k] = "h";
      i += span - 1;
    }
  }
  return kinds;
}

const isAttribution = (s: string): boolean =>
  s.length <= MAX_HEADER_CHARS && ENDS_WITH_COLON.test(s) && ATTRIBUTION_VERB.test(s);

/** How many lines (1–3) from `i` form an attribution, or 0. */
function attributionSpan(lines: string[], kinds: Kind[], i: number): number {
  const first = (lines[i] as string).trim();
  if (isAttribution(first)) return 1;
  // A wrapped one must open like one, and the next line must not be a whole attribution that opens
  // like one itself (else a paragraph's last line would be taken for the first half of the header
  // below it); "bob@example.com> wrote:" is a continuation.
  if (!ATTRIBUTION_OPENER.test(first)) return 0;
  let joined = first;
  for (let k = i + 1; k < Math.min(i + 3, lines.length); k++) {
    if (kinds[k] !== "t") return 0;
    const next = (lines[k] as string).trim();
    if (k === i + 1 && ATTRIBUTION_OPENER.test(next) && isAttribution(next)) return 0;
    joined = `${joined} ${next}`;
    if (isAttribution(joined)) return k - i + 1;
  }
  return 0;
}

function isOutlookBlock(lines: string[], i: number): boolean {
  if (!OUTLOOK_FROM.test((lines[i] as string).trim())) return false;
  for (let k = i + 1; k < Math.min(i + OUTLOOK_BLOCK_LINES, lines.length); k++) {
    const next = (lines[k] as string).trim();
    if (next.length <= MAX_HEADER_CHARS && OUTLOOK_SENT.test(next)) return true;
  }
  return false;
}

/** Moves `end` above a run of quoted lines (and their attribution) that reaches it. */
function withoutTrailingQuote(kinds: Kind[], end: number): number {
  let j = end;
  let quoted = false;
  while (j > 0 && (kinds[j - 1] === "q" || kinds[j - 1] === "e" || kinds[j - 1] === "h")) {
    if (kinds[j - 1] !== "e") quoted = true;
    j--;
  }
  return quoted ? j : end;
}

/** Moves `end` above blank lines and one rule line (Outlook's underscores above its header block). */
function backOverRule(lines: string[], kinds: Kind[], end: number): number {
  let j = end;
  while (j > 0 && kinds[j - 1] === "e") j--;
  if (j > 0 && RULE_LINE.test(lines[j - 1] as string)) j--;
  return j;
}

/** Bottom posting: the first line after a leading quote block when nothing below it is quoted. */
function afterLeadingQuote(kinds: Kind[], end: number): number {
  let m = 0;
  while (m < end && kinds[m] === "e") m++;
  if (m >= end || (kinds[m] !== "q" && kinds[m] !== "h")) return 0;
  while (m < end && (kinds[m] === "q" || kinds[m] === "h" || kinds[m] === "e")) m++;
  for (let k = m; k < end; k++) if (kinds[k] === "q" || kinds[k] === "h") return 0;
  return m;
}

/**
 * Where the signature begins: the first "-- " line, or a bare "--" (the space lost to a client or
 * relay that trims lines) with at most SHORT_SIGNATURE_LINES below it; else a one-line mobile
 * signature at the end.
 */
function signatureStart(lines: string[], start: number, end: number): number {
  for (let k = start; k < end; k++) {
    if (lines[k] === "-- " || (lines[k] === "--" && end - k - 1 <= SHORT_SIGNATURE_LINES)) return k;
  }
  let last = end;
  while (last > start && BLANK.test(lines[last - 1] as string)) last--;
  const line = (lines[last - 1] ?? "").trim();
  return last > start && line.length <= 120 && MOBILE_SIGNATURE.test(line) ? last - 1 : end;
}
