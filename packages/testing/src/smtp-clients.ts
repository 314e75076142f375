import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import type { Readable } from "node:stream";
import nodemailer from "nodemailer";
import type Mail from "nodemailer/lib/mailer/index.js";
import SMTPConnection from "nodemailer/lib/smtp-connection/index.js";

/** The outcome of one SMTP transaction as the client saw it. */
export type SendOutcome = {
  ok: boolean;
  /** Final reply line of the failing step, or the DATA reply on success. */
  response: string;
  code: number | null;
  accepted: string[];
  rejected: string[];
  /** The reply per rejected recipient. */
  rejectedErrors: { recipient: string; response: string; code: number | null }[];
};

export type ConnectOptions = { port: number; tls?: boolean; name?: string };

/** An open nodemailer SMTP connection (greeting + EHLO done), for tests that need the steps. */
export async function connect(opts: ConnectOptions): Promise<SMTPConnection> {
  const conn = new SMTPConnection({
    host: "127.0.0.1",
    port: opts.port,
    secure: false,
    ignoreTLS: !opts.tls,
    requireTLS: Boolean(opts.tls),
    tls: { rejectUnauthorized: false },
    name: opts.name ?? "client.example",
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
  await new Promise<void>((resolve, reject) => {
    // A refused greeting (421) arrives as an "error" event, not through the callback.
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      conn.close();
      reject(err);
    };
    conn.once("error", fail);
    // nodemailer may report "end" before the "error" that carries the reply: let the error win.
    conn.once("end", () => setImmediate(() => fail(new Error("connection closed before the greeting"))));
    conn.connect((err) => {
      if (err) return fail(err);
      conn.removeAllListeners("error");
      conn.removeAllListeners("end");
      conn.on("error", () => undefined);
      resolve();
    });
  });
  return conn;
}

export function send(
  conn: SMTPConnection,
  envelope: { from: string; to: string[]; size?: number },
  message: string | Buffer | Readable,
): Promise<SendOutcome> {
  return new Promise((resolve) => {
    conn.send(envelope, message, (err, info) => {
      if (err) {
        const e = err as SMTPConnection.SMTPError & {
          rejected?: string[];
          rejectedErrors?: SMTPConnection.SMTPError[];
        };
        resolve({
          ok: false,
          response: e.response ?? e.message,
          code: e.responseCode ?? null,
          accepted: [],
          rejected: e.rejected ?? envelope.to,
          rejectedErrors: (e.rejectedErrors ?? [e]).map((r) => ({
            recipient: (r as { recipient?: string }).recipient ?? "",
            response: r.response ?? r.message,
            code: r.responseCode ?? null,
          })),
        });
        return;
      }
      const i = info as SMTPConnection.SentMessageInfo & { rejectedErrors?: SMTPConnection.SMTPError[] };
      resolve({
        ok: true,
        response: i.response,
        code: Number(i.response.slice(0, 3)),
        accepted: i.accepted.map(String),
        rejected: i.rejected.map(String),
        rejectedErrors: (i.rejectedErrors ?? []).map((r) => ({
          recipient: (r as { recipient?: string }).recipient ?? "",
          response: r.response ?? r.message,
          code: r.responseCode ?? null,
        })),
      });
    });
  });
}

/** Connect, one transaction, QUIT. */
export async function sendOnce(
  opts: ConnectOptions,
  envelope: { from: string; to: string[]; size?: number },
  message: string | Buffer | Readable,
): Promise<SendOutcome> {
  const conn = await connect(opts);
  try {
    return await send(conn, envelope, message);
  } finally {
    conn.quit();
  }
}

export const simpleMessage = (from: string, to: string, subject = "hello", body = "Hello there.\r\n") =>
  `From: ${from}\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${Math.random().toString(36).slice(2)}@client.example>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\n${body}`;

export const SWAKS = "/usr/bin/swaks";
export const haveSwaks = () => existsSync(SWAKS);

/** Runs swaks; resolves with its full transcript (swaks exits non-zero on a rejection). */
export function swaks(args: string[]): Promise<{ code: number; transcript: string }> {
  return new Promise((resolve) => {
    execFile(SWAKS, ["--hide-informational", ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === "number" ? Number(err.code) : 1) : 0;
      resolve({ code, transcript: `${stdout}${stderr}` });
    });
  });
}

/** A line-level view of the server's replies on a raw socket, for the timeout tests. */
export function rawSession(port: number): Promise<{
  socket: net.Socket;
  lines: string[];
  write(line: string): void;
  next(match: RegExp): Promise<string>;
  closed: Promise<void>;
}> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const lines: string[] = [];
    const waiters: { match: RegExp; resolve: (l: string) => void }[] = [];
    let buf = "";
    const closed = new Promise<void>((r) => socket.once("close", () => r()));
    socket.on("data", (d) => {
      buf += d.toString("utf8");
      let i = buf.indexOf("\r\n");
      while (i >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        lines.push(line);
        for (const w of [...waiters]) {
          if (w.match.test(line)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(line);
          }
        }
        i = buf.indexOf("\r\n");
      }
    });
    socket.on("error", () => undefined);
    socket.once("connect", () =>
      resolve({
        socket,
        lines,
        closed,
        write: (line) => socket.write(`${line}\r\n`),
        next: (match) =>
          new Promise<string>((r) => {
            const seen = lines.find((l) => match.test(l));
            if (seen) return r(seen);
            waiters.push({ match, resolve: r });
          }),
      }),
    );
    socket.once("error", reject);
  });
}

/** One message to the SMTP server on 127.0.0.1:`port` through nodemailer (no TLS); rejects on a refusal. */
export async function sendMail(port: number, mail: Mail.Options): Promise<void> {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true });
  try {
    await transport.sendMail(mail);
  } finally {
    transport.close();
  }
}
