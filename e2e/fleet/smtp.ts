// One SMTP transaction per connection on a raw socket, recording how far it got: a session that
// reached 354 and then did not get its 250 was cut. Large bodies are paced, as a sender on a slow
// link sends them, so they are still in DATA when a replica is told to stop.
import net from "node:net";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";

export type Outcome = {
  tag: string;
  port: number;
  big: boolean;
  /** Refused before the transaction began (connection refused, 421 at the greeting/EHLO/MAIL): retried elsewhere. */
  refused: boolean;
  /** Got 354: from here on, anything but a 250 is a cut upload. */
  dataStarted: boolean;
  /** The reply to the final dot (or to the command that failed); null when the connection went first. */
  code: number | null;
  reply: string;
  spoolId?: string;
  /** performance.now() of the 250. */
  acceptedAt?: number;
};

export type Message = { tag: string; to: string; bytes: number; big: boolean; paceMs?: number };

/** Final replies, in order, from one socket; a multi-line reply is one item (its last line). */
class Replies {
  private buf = "";
  private readonly got: string[] = [];
  private readonly waiting: ((line: string | null) => void)[] = [];
  private closed = false;
  constructor(socket: net.Socket) {
    socket.on("data", (d: Buffer) => {
      this.buf += d.toString("latin1");
      for (let i = this.buf.indexOf("\r\n"); i >= 0; i = this.buf.indexOf("\r\n")) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 2);
        if (/^\d{3} /.test(line)) this.push(line);
      }
    });
    const end = () => {
      this.closed = true;
      for (const w of this.waiting.splice(0)) w(null);
    };
    socket.on("close", end);
    socket.on("error", end);
  }
  private push(line: string) {
    const w = this.waiting.shift();
    if (w) w(line);
    else this.got.push(line);
  }
  next(): Promise<string | null> {
    const line = this.got.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.closed) return Promise.resolve(null);
    return new Promise((r) => this.waiting.push(r));
  }
}

function connect(port: number): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.once("connect", () => resolve(s));
    s.once("error", () => resolve(null));
  });
}

/** A message of about `bytes`: headers with the tag as subject, then 76-character lines. */
export function messageBody(m: Message): Buffer {
  const head = `From: load@sender.example\r\nTo: ${m.to}\r\nSubject: ${m.tag}\r\nMessage-ID: <${m.tag}@sender.example>\r\n\r\n`;
  const line = `${"x".repeat(76)}\r\n`;
  const lines = Math.max(1, Math.floor((m.bytes - head.length) / line.length));
  return Buffer.from(head + line.repeat(lines), "latin1");
}

/**
 * One transaction on `port`. `onData` runs once the first slice of the body is written (the
 * moment a test may stop the replica under it).
 */
export async function sendMessage(port: number, m: Message, onData?: () => void): Promise<Outcome> {
  const out: Outcome = { tag: m.tag, port, big: m.big, refused: true, dataStarted: false, code: null, reply: "" };
  const socket = await connect(port);
  if (!socket) return { ...out, reply: "connection refused" };
  const replies = new Replies(socket);
  try {
    const step = async (line: string | null, want: string) => {
      if (line !== null) socket.write(`${line}\r\n`);
      const r = await replies.next();
      out.reply = r ?? "connection closed";
      out.code = r ? Number(r.slice(0, 3)) : null;
      return r?.startsWith(want) ?? false;
    };
    if (!(await step(null, "220")) || !(await step("EHLO load.example", "250"))) return out;
    if (!(await step("MAIL FROM:<load@sender.example>", "250"))) return out;
    if (!(await step(`RCPT TO:<${m.to}>`, "250")) || !(await step("DATA", "354"))) return out;
    out.refused = false;
    out.dataStarted = true;
    await writeBody(socket, messageBody(m), m.paceMs ?? 0, onData);
    if (await step(".", "250")) {
      out.acceptedAt = performance.now();
      out.spoolId = /queued as (\S+)/.exec(out.reply)?.[1];
      socket.write("QUIT\r\n");
    }
    return out;
  } finally {
    socket.end();
    setTimeout(() => socket.destroy(), 1_000).unref();
  }
}

/** The body in 64 KB slices, spread over `paceMs` (at least), then the line the final dot starts. */
async function writeBody(socket: net.Socket, body: Buffer, paceMs: number, onData?: () => void): Promise<void> {
  const slice = 64 * 1024;
  const slices = Math.ceil(body.length / slice);
  const started = performance.now();
  for (let i = 0; i < slices; i++) {
    if (socket.destroyed) return;
    const ok = socket.write(body.subarray(i * slice, (i + 1) * slice));
    if (i === 0) onData?.();
    if (!ok) await new Promise((r) => socket.once("drain", r));
    const due = started + (paceMs * (i + 1)) / slices;
    const wait = due - performance.now();
    if (wait > 0) await delay(wait);
  }
}
