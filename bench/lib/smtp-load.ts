// A lean SMTP load generator on raw sockets (no pipelining, like Postfix's smtp-source): each
// connection sends EHLO once, then MAIL, RCPT, DATA, message, "." per message, and times each message
// from MAIL to the 250 after its data. Lean so that the client is not what limits the server.
import net from "node:net";
import { performance } from "node:perf_hooks";

export type Envelope = { from: string; to: string };

/** A 250/354 reader over one socket: resolves each complete (possibly multi-line) reply in order. */
class Conn {
  private buf = "";
  private waiting: ((reply: string) => void)[] = [];
  private failed: Error | null = null;
  private failWaiters: ((e: Error) => void)[] = [];
  constructor(readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on("data", (d: Buffer) => {
      this.buf += d.toString("latin1");
      for (;;) {
        // A reply ends with a line "NNN text" (a space after the code; "NNN-" continues).
        const m = /(^|\r\n)(\d{3}) [^\r\n]*\r\n/.exec(this.buf);
        if (!m) break;
        const end = m.index + m[0].length;
        const reply = this.buf.slice(0, end);
        this.buf = this.buf.slice(end);
        this.failWaiters.shift();
        this.waiting.shift()?.(reply.trim());
      }
    });
    const fail = (e: Error) => {
      this.failed = e;
      for (const f of this.failWaiters.splice(0)) f(e);
      this.waiting = [];
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("connection closed")));
  }
  reply(): Promise<string> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.waiting.push(resolve);
      this.failWaiters.push(reject);
    });
  }
  async cmd(line: string | Buffer, expect: string): Promise<string> {
    const r = this.reply();
    this.socket.write(line);
    const reply = await r;
    if (!reply.startsWith(expect))
      throw new Error(`expected ${expect} after ${String(line).slice(0, 30).trim()}: ${reply}`);
    return reply;
  }
}

export async function openSmtp(port: number, host = "127.0.0.1"): Promise<Conn> {
  const socket = net.connect({ host, port });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const c = new Conn(socket);
  const banner = await c.reply();
  if (!banner.startsWith("220")) throw new Error(`banner: ${banner}`);
  await c.cmd("EHLO load.bench.test\r\n", "250");
  return c;
}

/** Sends one message (already dot-stuffed, CRLF line ends) and returns the final reply. */
export async function sendOne(c: Conn, env: Envelope, data: Buffer): Promise<string> {
  await c.cmd(`MAIL FROM:<${env.from}>\r\n`, "250");
  await c.cmd(`RCPT TO:<${env.to}>\r\n`, "250");
  await c.cmd("DATA\r\n", "354");
  const r = c.reply();
  c.socket.write(data);
  c.socket.write("\r\n.\r\n");
  return r;
}

export const closeSmtp = (c: Conn) => {
  c.socket.end("QUIT\r\n");
};

/** A plain message of about `bytes` bytes, lines of 76 characters, nothing to dot-stuff. */
export function plainMessage(env: Envelope, bytes: number, subject = "bench"): Buffer {
  const head =
    `From: <${env.from}>\r\nTo: <${env.to}>\r\nSubject: ${subject}\r\n` +
    `Message-ID: <${Math.random().toString(36).slice(2)}@bench.test>\r\nDate: ${new Date().toUTCString()}\r\n\r\n`;
  const line = `${"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod te".padEnd(76, "x")}\r\n`;
  const lines = Math.max(1, Math.ceil((bytes - head.length) / line.length));
  return Buffer.from(head + line.repeat(lines).slice(0, -2));
}

const envelopeOf = (e: Envelope | ((i: number) => Envelope)) => (typeof e === "function" ? e : () => e);

export type LoadResult = { sent: number; failed: number; seconds: number; rate: number; latenciesMs: number[] };

/**
 * Closed loop: `connections` sessions share `count` messages, each sending its next one when the
 * previous got its 250. `message(i)` may vary the content; `onAccepted` sees each 250 as it comes.
 */
export type LoopOptions = {
  port: number;
  connections: number;
  count: number;
  /** One envelope for all messages, or one per message number. */
  env: Envelope | ((i: number) => Envelope);
  message: (i: number) => Buffer;
  /** Called at each 250 with the message number and performance.now(). */
  onAccepted?: (i: number, at: number) => void;
};

export async function closedLoop(opts: LoopOptions): Promise<LoadResult> {
  const conns = await Promise.all(Array.from({ length: opts.connections }, () => openSmtp(opts.port)));
  const envOf = envelopeOf(opts.env);
  const latenciesMs: number[] = [];
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    conns.map(async (c) => {
      while (next < opts.count) {
        const i = next++;
        const data = opts.message(i);
        const t0 = performance.now();
        const reply = await sendOne(c, envOf(i), data);
        const t1 = performance.now();
        if (reply.startsWith("250")) {
          latenciesMs.push(t1 - t0);
          opts.onAccepted?.(i, t1);
        } else failed++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  for (const c of conns) closeSmtp(c);
  return { sent: latenciesMs.length, failed, seconds, rate: latenciesMs.length / seconds, latenciesMs };
}

/**
 * Open loop: message i is due at start + i/rate whatever the server does (as independent senders
 * would send), over a pool of `connections` sessions; a message waits for a free session when all
 * are busy, so a server slower than the offered rate shows as a lower achieved rate.
 */
export async function openLoop(opts: LoopOptions & { rate: number }): Promise<LoadResult> {
  const conns = await Promise.all(Array.from({ length: opts.connections }, () => openSmtp(opts.port)));
  const envOf = envelopeOf(opts.env);
  const idle = [...conns];
  const waiters: ((c: Conn) => void)[] = [];
  const take = () => (idle.length ? Promise.resolve(idle.pop() as Conn) : new Promise<Conn>((r) => waiters.push(r)));
  const give = (c: Conn) => (waiters.length ? waiters.shift()?.(c) : idle.push(c));
  const latenciesMs: number[] = [];
  let failed = 0;
  const started = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < opts.count; i++) {
    const due = started + (i * 1000) / opts.rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const c = await take();
    inflight.push(
      (async () => {
        const t0 = performance.now();
        const reply = await sendOne(c, envOf(i), opts.message(i));
        const t1 = performance.now();
        give(c);
        if (reply.startsWith("250")) {
          latenciesMs.push(t1 - t0);
          opts.onAccepted?.(i, t1);
        } else failed++;
      })(),
    );
  }
  await Promise.all(inflight);
  const seconds = (performance.now() - started) / 1000;
  for (const c of conns) closeSmtp(c);
  return { sent: latenciesMs.length, failed, seconds, rate: latenciesMs.length / seconds, latenciesMs };
}
