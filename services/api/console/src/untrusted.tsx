/**
 * Text that came with a message (subjects, addresses, file names, content types, block-log fields):
 * the sender chose every character of it. Unicode's bidirectional embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069) reorder what follows them, so `invoice<U+202E>fdp.exe` reads as
 * "invoiceexe.pdf" and, unterminated, flips the text beside it too. Here each such character is
 * shown as its code point, and the string sits in its own `<bdi>`, so its direction (Hebrew and
 * Arabic subjects stay readable) never spills into the page around it.
 */
const REORDERING = /[\u202A-\u202E\u2066-\u2069]/g;

const codePoint = (c: string) => `[U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}]`;

/** The string with every bidi embedding, override or isolate shown as `[U+202E]`. */
export const showBidiControls = (s: string): string => s.replace(REORDERING, codePoint);

/** A sender-supplied string, isolated from its neighbours and with its reordering characters shown. */
export function Untrusted({ text, className, title }: { text: string; className?: string; title?: boolean }) {
  const shown = showBidiControls(text);
  return (
    <bdi className={className} title={title ? shown : undefined}>
      {shown}
    </bdi>
  );
}

/**
 * The extension a file really has: the part after the last dot of the name as stored (the order a
 * program opening it uses), not as it would be drawn. Empty when there is none.
 */
export function realExtension(filename: string): string {
  const name = filename.replace(REORDERING, "");
  const dot = name.lastIndexOf(".");
  return dot > 0 && dot < name.length - 1 ? name.slice(dot + 1).toLowerCase() : "";
}
