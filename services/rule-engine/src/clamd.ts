/**
 * A client of ClamAV's daemon (clamd) for one thing: INSTREAM, the command that scans bytes sent
 * over the connection. The raw message is sent as it is: clamd parses the MIME itself and scans
 * every part, decoded, and every archive inside them. No file is written on either side.
 *
 * Protocol (clamd(8)): `zINSTREAM\0`, then chunks of `<4-byte big-endian length><bytes>`, then a
 * zero-length chunk; the answer is one NUL-terminated line: `stream: OK`, `stream: <signature> FOUND`,
 * or `<text> ERROR` (e.g. `INSTREAM size limit exceeded. ERROR` past clamd's StreamMaxLength).
 */
import net from "node:net";

/** Where clamd listens: `tcp://host:port`, or a unix socket as `unix:///path` or a bare absolute path. */
export type ClamdAddress = { host: string; port: number } | { path: string };

export type ClamdAnswer = { found: string } | { clean: true };

/**
 * Why clamd gave no verdict: it could not be reached, it did not answer in time, the connection
 * broke, or (`refused`) it answered an error about this stream (e.g. longer than StreamMaxLength).
 */
export class ClamdError extends Error {
  override name = "ClamdError";
  constructor(
    readonly kind: "unavailable" | "timeout" | "error" | "refused",
    message: string,
  ) {
    super(message);
  }
}

/** A clamd URL, or the problem with it (for the env schema's message). */
export function parseClamdUrl(value: string): ClamdAddress | string {
  if (value.startsWith("/")) return { path: value };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be tcp://host:port, unix:///path/to/clamd.sock or an absolute socket path";
  }
  if (url.protocol === "unix:") {
    return url.pathname.startsWith("/") && !url.host
      ? { path: decodeURIComponent(url.pathname) }
      : "unix: needs an absolute path (unix:///run/clamav/clamd.ctl)";
  }
  if (url.protocol !== "tcp:") return `unsupported scheme ${url.protocol} (use tcp:// or unix://)`;
  const port = Number(url.port);
  if (!url.hostname || !Number.isInteger(port) || port < 1)
    return "tcp:// needs a host and a port (tcp://127.0.0.1:3310)";
  return { host: url.hostname.replace(/^\[(.*)\]$/, "$1"), port };
}

/** Bytes sent per INSTREAM chunk; clamd reads each into a buffer of its own. */
const CHUNK_BYTES = 256 * 1024;

/**
 * Scans `raw` with INSTREAM, within `timeoutMs` for the whole exchange (connect, send, scan,
 * answer). Throws a ClamdError when there is no verdict.
 */
export function clamdScan(address: ClamdAddress, raw: Uint8Array, timeoutMs: number): Promise<ClamdAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(address);
    let answer = "";
    let settled = false;
    const finish = (err: ClamdError | null, result?: ClamdAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(result as ClamdAnswer);
    };
    const timer = setTimeout(
      () => finish(new ClamdError("timeout", `clamd did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    send(socket, raw);
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString("latin1");
      const end = answer.indexOf("\0");
      if (end >= 0) settleAnswer(answer.slice(0, end), finish);
    });
    // clamd closes the connection after answering; an answer without its NUL still counts.
    socket.on("end", () =>
      answer
        ? settleAnswer(answer, finish)
        : finish(new ClamdError("error", "clamd closed the connection without an answer")),
    );
    socket.on("error", (err: NodeJS.ErrnoException) => {
      // An answer that came before the error (clamd refusing the rest of a too-long stream) stands.
      if (answer) return settleAnswer(answer.replace(/\0.*$/s, ""), finish);
      finish(socketError(socket, err));
    });
  });
}

/**
 * Refused connections are clamd being down. A write that fails once connected means clamd closed
 * the stream before its end: it answers `INSTREAM size limit exceeded` and closes when a stream
 * passes its StreamMaxLength, and Node drops that answer when the failed write comes first.
 */
function socketError(socket: net.Socket, err: NodeJS.ErrnoException): ClamdError {
  if (socket.connecting || err.code === "ECONNREFUSED" || err.code === "ENOENT")
    return new ClamdError("unavailable", `clamd: ${err.code ?? err.message}`);
  if (err.code === "EPIPE" || err.code === "ECONNRESET")
    return new ClamdError("refused", `clamd closed the stream before its end (${err.code}; past its StreamMaxLength?)`);
  return new ClamdError("error", `clamd: ${err.code ?? err.message}`);
}

function settleAnswer(line: string, finish: (err: ClamdError | null, result?: ClamdAnswer) => void): void {
  const text = line.trim();
  const found = /^stream: (.+) FOUND$/.exec(text);
  if (found?.[1]) finish(null, { found: found[1] });
  else if (/^stream: OK$/.test(text)) finish(null, { clean: true });
  else finish(new ClamdError("refused", `clamd answered: ${text.slice(0, 200)}`));
}

/**
 * The command, the chunks with their length prefixes, the end mark, written at once: the socket
 * queues views of `raw` (no copies) until it connects and drains them as clamd reads.
 */
function send(socket: net.Socket, raw: Uint8Array): void {
  socket.write(Buffer.from("zINSTREAM\0", "latin1"));
  for (let at = 0; at < raw.byteLength; at += CHUNK_BYTES) {
    const chunk = raw.subarray(at, Math.min(at + CHUNK_BYTES, raw.byteLength));
    const length = Buffer.alloc(4);
    length.writeUInt32BE(chunk.byteLength);
    socket.write(length);
    socket.write(chunk);
  }
  socket.write(Buffer.alloc(4));
}
