/**
 * Runs inside a worker thread (see parse.ts). Node 24 strips the types of this file itself, so it
 * uses only erasable TypeScript and imports nothing from the monorepo but @mailroom/core/addresses and
 * @mailroom/core/reply-text (both import-free).
 *
 * One message per request: a cheap structural pass (MIME parts, nesting, header size) first, then
 * mailparser with the options that avoid its known expensive paths. Attachment contents are sent
 * back as transferred ArrayBuffers, so the decoded bytes exist once, in the thread that stores them.
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { Readable } from "node:stream";
import { parentPort } from "node:worker_threads";
// The one file of the monorepo this worker loads: erasable TypeScript with no imports, shared with
// the API's shield dry run so both read address headers the same way.
import {
  addressesOf as addresses,
  firstAddressOf,
  firstNameOf,
  type ParsedAddressField,
} from "@mailroom/core/addresses";
// Reply stripping is pure text work on a body that may be megabytes: it belongs off the event loop.
import { stripReply } from "@mailroom/core/reply-text";

const require = createRequire(import.meta.url);
const { MailParser } = require("mailparser");
const { Splitter } = require("@zone-eu/mailsplit");

export type ParseLimits = {
  /** MIME parts in the whole message (Haraka: max_mime_parts 1000). */
  maxParts: number;
  /** multipart / message/rfc822 nesting depth (Postfix: mime_nesting_limit 100). */
  maxDepth: number;
  /** Header block of any one part, bytes (Postfix: header_size_limit 102400). */
  maxHeaderBytes: number;
  /** HTML bodies longer than this are not converted to text (html-to-text is the slow path). */
  maxHtmlToTextBytes: number;
};

export type WorkerRequest = { id: number; raw: Uint8Array; limits: ParseLimits };

export type WorkerAttachment = {
  filename: string;
  contentType: string;
  size: number;
  contentId: string | null;
  disposition: "attachment" | "inline";
  checksum: string;
  content: Uint8Array;
};

export type WorkerEmail = {
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  fromAddress: string;
  fromName: string | null;
  toAddresses: string[];
  ccAddresses: string[];
  replyTo: string[];
  subject: string;
  textBody: string;
  /** textBody without quoted history or signature (@mailroom/core/reply-text). */
  strippedText: string;
  htmlBody: string;
  headers: { key: string; value: string }[];
  attachments: WorkerAttachment[];
  /** Non-fatal trouble (e.g. HTML too long to convert to text). */
  warnings: string[];
};

export type WorkerResponse = { id: number; ok: true; email: WorkerEmail } | { id: number; ok: false; error: string };

type AddressObject = ParsedAddressField;

/**
 * RFC 5322 §2.2.3 unfolding of a raw header value: a line break followed by whitespace is a fold,
 * not content. mailsplit hands us the header lines still folded (`or\r\n\tbad?`); the CRLF goes
 * and the whitespace around it becomes one space, as libmime does for the decoded fields (subject,
 * names), so the raw and decoded views of a header agree. A bare CR or LF counts as a line break.
 */
export const unfold = (value: string): string => value.replace(/[ \t]*(?:\r\n|\r|\n)[ \t]*/g, " ").trim();

const messageIds = (v: string | string[] | undefined): string[] =>
  (Array.isArray(v) ? v : v ? v.split(/\s+/) : []).map((s) => s.trim()).filter(Boolean);

/** Streams the message through mailsplit only to count parts, depth and header bytes. */
export function checkStructure(raw: Uint8Array, limits: ParseLimits): Promise<string | null> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (v: string | null) => {
      if (settled) return;
      settled = true;
      resolve(v);
      splitter.destroy();
    };
    // mailsplit enforces head size and node count itself; one more than ours so that our own,
    // clearer message wins when both trip.
    const splitter = new Splitter({ maxHeadSize: limits.maxHeaderBytes + 1, maxChildNodes: limits.maxParts + 1 });
    let parts = 0;
    splitter.on("data", (data: { type: string; parentNode?: unknown; getHeaders?: () => Buffer }) => {
      if (data.type !== "node") return;
      parts++;
      if (parts > limits.maxParts) return done(`too many MIME parts (limit ${limits.maxParts})`);
      let depth = 0;
      for (let n = data.parentNode as { parentNode?: unknown } | false; n; n = n.parentNode as typeof n) depth++;
      if (depth > limits.maxDepth) return done(`MIME nesting too deep (limit ${limits.maxDepth})`);
      const headerBytes = data.getHeaders ? data.getHeaders().length : 0;
      if (headerBytes > limits.maxHeaderBytes)
        return done(`header block too large (limit ${limits.maxHeaderBytes} bytes)`);
    });
    splitter.on("error", (err: Error) =>
      done(
        /header size/i.test(err.message)
          ? `header block too large (limit ${limits.maxHeaderBytes} bytes)`
          : err.message,
      ),
    );
    splitter.on("end", () => done(null));
    Readable.from(chunks(raw)).pipe(splitter);
  });
}

function* chunks(raw: Uint8Array): Generator<Buffer> {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  for (let i = 0; i < buf.length; i += 64 * 1024) yield buf.subarray(i, i + 64 * 1024);
}

/** Own, exactly-sized backing store: transferable without detaching a shared pool. */
function own(buf: Buffer): Uint8Array {
  if (buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength && !(buf.buffer instanceof SharedArrayBuffer)) {
    return new Uint8Array(buf.buffer);
  }
  const copy = new Uint8Array(buf.byteLength);
  copy.set(buf);
  return copy;
}

type AttachmentData = {
  content: NodeJS.ReadableStream & { on: (e: string, f: (...a: unknown[]) => void) => void };
  filename?: string;
  contentType?: string;
  cid?: string;
  contentDisposition?: string;
  checksum?: string;
  release: () => void;
};

/** What mailparser told us so far, turned into the email once it has ended. */
type Collected = {
  headers: Map<string, unknown>;
  headerLines: { key: string; line: string }[];
  text: string;
  html: string;
  attachments: WorkerAttachment[];
  warnings: string[];
};

export function parseMime(raw: Uint8Array, limits: ParseLimits): Promise<WorkerEmail> {
  return new Promise((resolve, reject) => {
    const parser = new MailParser({
      // Link detection and text→HTML are mailparser's known slow paths on hostile text
      // (nodemailer/mailparser#194, #389); cid→data: inlining duplicates every inline image.
      skipTextToHtml: true,
      skipTextLinks: true,
      skipImageLinks: true,
      keepCidLinks: true,
      maxHtmlLengthToParse: limits.maxHtmlToTextBytes,
      maxHeadSize: limits.maxHeaderBytes + 1,
      maxChildNodes: limits.maxParts + 1,
    });
    const got: Collected = { headers: new Map(), headerLines: [], text: "", html: "", attachments: [], warnings: [] };
    let pendingAttachments = 0;
    let ended = false;
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      reject(err);
    };
    const finish = () => {
      if (!failed && ended && pendingAttachments === 0) resolve(emailOf(got));
    };
    parser.on("headers", (h: Map<string, unknown>) => {
      got.headers = h;
      got.headerLines = parser.headerLines ?? [];
    });
    parser.on("error", (err: Error) => {
      // Not fatal: mailparser carries on with a placeholder text, which we drop.
      if (/^HTML too long|^Failed to parse HTML/.test(err.message)) got.warnings.push(err.message);
      else fail(err);
    });
    parser.on("data", (data: Record<string, unknown>) => {
      if (data.type === "text") {
        got.text = typeof data.text === "string" ? data.text : "";
        if (/^Invalid HTML content/.test(got.text)) got.text = "";
        got.html = typeof data.html === "string" ? data.html : "";
        return;
      }
      if (data.type !== "attachment") return;
      pendingAttachments++;
      collectAttachment(data as AttachmentData, fail, (a) => {
        got.attachments.push(a);
        pendingAttachments--;
        finish();
      });
    });
    parser.on("end", () => {
      ended = true;
      finish();
    });
    Readable.from(chunks(raw)).pipe(parser);
  });
}

function emailOf(got: Collected): WorkerEmail {
  const { headers } = got;
  const from = headers.get("from") as AddressObject | undefined;
  const subject = headers.get("subject");
  return {
    messageId: (headers.get("message-id") as string | undefined) ?? null,
    inReplyTo: messageIds(headers.get("in-reply-to") as string | undefined)[0] ?? null,
    references: messageIds(headers.get("references") as string | string[] | undefined),
    fromAddress: firstAddressOf(from),
    fromName: firstNameOf(from),
    toAddresses: addresses(headers.get("to") as AddressObject | undefined),
    ccAddresses: addresses(headers.get("cc") as AddressObject | undefined),
    replyTo: addresses(headers.get("reply-to") as AddressObject | undefined),
    subject: typeof subject === "string" ? subject : "",
    textBody: got.text,
    strippedText: stripReply(got.text),
    htmlBody: got.html,
    headers: got.headerLines.map((h) => ({ key: h.key, value: unfold(h.line.slice(h.line.indexOf(":") + 1)) })),
    attachments: got.attachments,
    warnings: got.warnings,
  };
}

/** Reads one attachment's stream into one exactly-sized buffer, then hands it back to mailparser. */
function collectAttachment(att: AttachmentData, fail: (err: Error) => void, done: (a: WorkerAttachment) => void) {
  const parts: Buffer[] = [];
  let size = 0;
  att.content.on("data", (chunk) => {
    parts.push(chunk as Buffer);
    size += (chunk as Buffer).length;
  });
  att.content.on("end", () => {
    // Buffer.concat of one chunk returns a copy; allocate once and fill, freeing chunks as we go.
    const content = Buffer.allocUnsafeSlow(size);
    let at = 0;
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as Buffer;
      p.copy(content, at);
      at += p.length;
      parts[i] = Buffer.alloc(0);
    }
    att.release();
    done({
      filename: att.filename ?? "attachment",
      contentType: att.contentType || "application/octet-stream",
      size,
      contentId: att.cid ?? null,
      disposition: att.contentDisposition === "inline" ? "inline" : "attachment",
      checksum: att.checksum ?? createHash("md5").update(content).digest("hex"),
      content: new Uint8Array(content.buffer, 0, size),
    });
  });
  att.content.on("error", (err) => fail(err as Error));
}

async function handle(req: WorkerRequest): Promise<{ res: WorkerResponse; transfer: ArrayBuffer[] }> {
  const problem = await checkStructure(req.raw, req.limits);
  if (problem) return { res: { id: req.id, ok: false, error: problem }, transfer: [] };
  try {
    const email = await parseMime(req.raw, req.limits);
    for (const a of email.attachments) a.content = own(Buffer.from(a.content.buffer, a.content.byteOffset, a.size));
    const transfer = email.attachments.map((a) => a.content.buffer as ArrayBuffer);
    return { res: { id: req.id, ok: true, email }, transfer };
  } catch (err) {
    return { res: { id: req.id, ok: false, error: (err as Error).message || String(err) }, transfer: [] };
  }
}

if (parentPort) {
  const port = parentPort;
  port.on("message", (req: WorkerRequest) => {
    handle(req).then(({ res, transfer }) => port.postMessage(res, transfer));
  });
  // Modules loaded: the parent starts a message's deadline only from here (parse.ts).
  port.postMessage({ ready: true });
}
