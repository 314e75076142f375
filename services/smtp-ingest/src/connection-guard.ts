import type { Readable } from "node:stream";
import type { SMTPServer, SMTPServerSession } from "smtp-server";
import { smtpError } from "./enhanced-codes.ts";
import { networkOf } from "./net-prefix.ts";
import { chooseVictim } from "./shedding.ts";
import { connectionsOf, installConnectionHooks, type LiveConnection } from "./smtp-internals.ts";

/**
 * The connection policy against slow clients (issue 12): caps per address and per network, a
 * budget for sessions that have not reached MAIL yet, deadlines per phase, a floor on the DATA
 * rate, and shedding of the most stalled session when the server is full. Times in ms.
 */
export type ConnectionPolicy = {
  maxConnections: number;
  maxPerIp: number;
  /** Per /24 (IPv4) or /64 (IPv6). */
  maxPerNet: number;
  /** Sessions without a MAIL FROM accepted yet; past it the most stalled of them is shed. */
  maxPreMail: number;
  /** From the greeting to the first accepted MAIL FROM. 0 = none. */
  mailDeadlineMs: number;
  /** For a whole command line once the previous reply is out (trickling does not extend it). 0 = none. */
  commandTimeoutMs: number;
  /** DATA must average at least this many bytes/s over each window. 0 = no floor. */
  dataMinBytesPerSec: number;
  dataRateWindowMs: number;
  /** Longest a connection may stay open, however busy. 0 = none. */
  lifetimeMs: number;
  /** smtp-server's early-talker pause before the banner. */
  greetingDelayMs: number;
};

export const defaultPolicy = (maxConnections: number, maxPerIp: number): ConnectionPolicy => ({
  maxConnections,
  maxPerIp,
  maxPerNet: Math.max(maxPerIp, 50),
  maxPreMail: Math.max(1, Math.floor(maxConnections / 2)),
  mailDeadlineMs: 60_000,
  commandTimeoutMs: 60_000,
  dataMinBytesPerSec: 1024,
  dataRateWindowMs: 30_000,
  lifetimeMs: 1_800_000,
  greetingDelayMs: 100,
});

type DataWindow = { start: number; bytes: number; stalled: boolean };
type Tracked = {
  conn: LiveConnection;
  ip: string;
  net: string;
  openedAt: number;
  admitted: boolean;
  mailSeen: boolean;
  /** When the client began to owe us a command (reply sent, or last seen waiting on us). */
  owesSince: number;
  /** Last completed command, or the greeting: what shedding ranks by. */
  progressAt: number;
  data: DataWindow | null;
};

export type ConnectionGuard = {
  /** onConnect: null to admit, else the 421 to refuse with (after shedding if that makes room). */
  admit(session: SMTPServerSession): Error | null;
  mailAccepted(session: SMTPServerSession): void;
  closed(session: SMTPServerSession): void;
  /** Runs the deadlines now (the timer calls it; tests may too). */
  sweep(now?: number): void;
  stop(): void;
};

const expireCode = "4.4.2";

export function guardConnections(server: SMTPServer, p: ConnectionPolicy, now = Date.now): ConnectionGuard {
  const byId = new Map<string, Tracked>();
  const perIp = new Map<string, number>();
  const perNet = new Map<string, number>();
  let preMail = 0;
  const watched = new WeakSet<object>();

  const bump = (m: Map<string, number>, k: string, by: number) => {
    const n = (m.get(k) ?? 0) + by;
    if (n <= 0) m.delete(k);
    else m.set(k, n);
  };
  const tracked = (conn: LiveConnection) => byId.get(conn.session.id);

  /** Waiting on us (a handler, or the onData verdict after the final dot): no client deadline runs. */
  const waitingOnUs = (c: LiveConnection) => c._handlerPending || (Boolean(c._dataStream) && !inData(c));
  const inData = (c: LiveConnection) => (c._parser || null)?._dataMode === true;

  function shed(code: string, text: string, onlyPreMail: boolean, except?: Tracked): boolean {
    const t = now();
    const candidates = [...byId.values()]
      .filter((r) => r !== except && r.admitted && !r.conn._closing && !r.conn._closed)
      .filter((r) => !(onlyPreMail && r.mailSeen))
      .filter((r) => !waitingOnUs(r.conn) && !inData(r.conn))
      .map((r) => ({ key: r, preMail: !r.mailSeen, idleMs: t - r.progressAt }));
    const victim = chooseVictim(candidates);
    if (!victim) return false;
    victim.conn.send(421, `${code} ${text}`);
    return true;
  }

  installConnectionHooks(server, {
    greetingDelayMs: p.greetingDelayMs,
    accepted(conn) {
      const t = now();
      const r: Tracked = {
        conn,
        ip: conn.remoteAddress,
        net: networkOf(conn.remoteAddress),
        openedAt: t,
        admitted: false,
        mailSeen: false,
        owesSince: t,
        progressAt: t,
        data: null,
      };
      byId.set(conn.session.id, r);
      // Full: make room by closing the most stalled session instead of refusing the newcomer, unless
      // its own address or network is at its cap (then it is refused anyway, and must not evict).
      if (connectionsOf(server).size <= p.maxConnections) return null;
      const capped = capRefusal(r);
      if (capped) return capped.message;
      if (shed("4.3.2", "Server busy, closing stalled connection", false, r)) return null;
      return "4.3.2 Too many connections, try again in a moment";
    },
    commandStarted(conn) {
      const r = tracked(conn);
      if (r) r.progressAt = now();
    },
    commandDone(conn) {
      const r = tracked(conn);
      if (!r) return;
      r.progressAt = now();
      r.owesSince = r.progressAt;
    },
  });

  /** The 421 for a newcomer whose address or network already holds its share, or null. */
  function capRefusal(r: Tracked): Error | null {
    if ((perIp.get(r.ip) ?? 0) >= p.maxPerIp) return smtpError(421, "4.7.0", "Too many connections from your address");
    if ((perNet.get(r.net) ?? 0) >= p.maxPerNet)
      return smtpError(421, "4.7.0", "Too many connections from your network");
    return null;
  }

  function admit(session: SMTPServerSession): Error | null {
    const r = byId.get(session.id);
    if (!r) return null; // not accepted through the hook (cannot happen): leave it to the idle timeout
    const capped = capRefusal(r);
    if (capped) return capped;
    if (preMail >= p.maxPreMail && !shed("4.3.2", "Server busy, closing idle connection", true, r)) {
      return smtpError(421, "4.3.2", "Too many connections, try again in a moment");
    }
    r.admitted = true;
    r.progressAt = r.owesSince = now(); // the greeting is sent once admitted
    bump(perIp, r.ip, 1);
    bump(perNet, r.net, 1);
    preMail++;
    return null;
  }

  function mailAccepted(session: SMTPServerSession) {
    const r = byId.get(session.id);
    if (!r || r.mailSeen) return;
    r.mailSeen = true;
    if (r.admitted) preMail--;
  }

  function closed(session: SMTPServerSession) {
    const r = byId.get(session.id);
    if (!r) return;
    byId.delete(session.id);
    if (!r.admitted) return;
    bump(perIp, r.ip, -1);
    bump(perNet, r.net, -1);
    if (!r.mailSeen) preMail--;
  }

  const expire = (r: Tracked, text: string) => r.conn.send(421, `${expireCode} ${text}`);

  /** Counts the DATA rate over windows in which the client alone set the pace. */
  function checkData(r: Tracked, t: number) {
    const c = r.conn;
    const parser = c._parser as { dataBytes: number };
    if (!r.data) {
      r.data = { start: t, bytes: parser.dataBytes, stalled: false };
      // Our own backpressure (the DATA memory budget, a slow spool write) pauses the stream and
      // then the socket: the client cannot send, so such a window proves nothing about it.
      const mark = () => {
        if (r.data) r.data.stalled = true;
      };
      for (const s of [c._dataStream as Readable, c._socket]) {
        if (s && !watched.has(s)) {
          watched.add(s);
          s.on("pause", mark);
        }
      }
    }
    const w = r.data;
    if ((c._dataStream || null)?.isPaused() || c._socket.isPaused()) w.stalled = true;
    if (t - w.start < p.dataRateWindowMs) return;
    const rate = ((parser.dataBytes - w.bytes) * 1000) / (t - w.start);
    if (!w.stalled && rate < p.dataMinBytesPerSec) {
      return expire(r, `Data rate too low (${Math.floor(rate)} bytes/s), closing connection`);
    }
    r.data = { start: t, bytes: parser.dataBytes, stalled: false };
  }

  function sweep(t = now()) {
    for (const r of byId.values()) {
      const c = r.conn;
      if (!r.admitted || c._closing || c._closed) continue;
      if (p.lifetimeMs && t - r.openedAt > p.lifetimeMs) {
        expire(r, "Connection time limit exceeded, closing connection");
        continue;
      }
      if (waitingOnUs(c)) {
        r.owesSince = t;
        r.data = null;
        continue;
      }
      if (inData(c)) {
        if (p.dataMinBytesPerSec) checkData(r, t);
        continue;
      }
      if (r.data) {
        r.data = null; // the message is in: the next command is owed from now
        r.owesSince = t;
      }
      if (p.mailDeadlineMs && !r.mailSeen && t - r.openedAt > p.mailDeadlineMs) {
        expire(r, "Too slow to begin a transaction, closing connection");
      } else if (p.commandTimeoutMs && t - r.owesSince > p.commandTimeoutMs) {
        expire(r, "Command timeout, closing connection");
      }
    }
  }

  // Sweeping every quarter of the shortest limit keeps a deadline at most ~25 % late.
  const limits = [p.mailDeadlineMs, p.commandTimeoutMs, p.dataMinBytesPerSec ? p.dataRateWindowMs : 0, p.lifetimeMs];
  const period = Math.min(1000, Math.max(25, Math.min(...limits.filter((x) => x > 0), 4000) / 4));
  const timer = setInterval(() => sweep(), period);
  timer.unref();
  const stop = () => clearInterval(timer);
  server.server?.once("close", stop);

  return { admit, mailAccepted, closed, sweep, stop };
}
