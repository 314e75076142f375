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
  const guard = new Guard(server, p, now);
  installConnectionHooks(server, {
    greetingDelayMs: p.greetingDelayMs,
    accepted: (conn) => guard.accepted(conn),
    commandStarted: (conn) => guard.commandStarted(conn),
    commandDone: (conn) => guard.commandDone(conn),
  });
  // Sweeping every quarter of the shortest limit keeps a deadline at most ~25 % late.
  const limits = [p.mailDeadlineMs, p.commandTimeoutMs, p.dataMinBytesPerSec ? p.dataRateWindowMs : 0, p.lifetimeMs];
  const period = Math.min(1000, Math.max(25, Math.min(...limits.filter((x) => x > 0), 4000) / 4));
  const timer = setInterval(() => guard.sweep(), period);
  timer.unref();
  const stop = () => clearInterval(timer);
  server.server?.once("close", stop);
  return {
    admit: (session) => guard.admit(session),
    mailAccepted: (session) => guard.mailAccepted(session),
    closed: (session) => guard.closed(session),
    sweep: (t) => guard.sweep(t),
    stop,
  };
}

/** Waiting on us (a handler, or the onData verdict after the final dot): no client deadline runs. */
const waitingOnUs = (c: LiveConnection) => c._handlerPending || (Boolean(c._dataStream) && !inData(c));
const inData = (c: LiveConnection) => (c._parser || null)?._dataMode === true;
const expire = (r: Tracked, text: string) => r.conn.send(421, `${expireCode} ${text}`);

const bump = (m: Map<string, number>, k: string, by: number) => {
  const n = (m.get(k) ?? 0) + by;
  if (n <= 0) m.delete(k);
  else m.set(k, n);
};

/** The sessions of one server and the counts the caps are checked against; each step a method. */
class Guard {
  private readonly byId = new Map<string, Tracked>();
  private readonly perIp = new Map<string, number>();
  private readonly perNet = new Map<string, number>();
  private preMail = 0;
  private readonly watched = new WeakSet<object>();

  constructor(
    private readonly server: SMTPServer,
    private readonly p: ConnectionPolicy,
    private readonly now: () => number,
  ) {}

  /** The hook in place of smtp-server's maxClients check (smtp-internals.ts): null, or the 421 text. */
  accepted(conn: LiveConnection): string | null {
    const t = this.now();
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
    this.byId.set(conn.session.id, r);
    // Full: make room by closing the most stalled session instead of refusing the newcomer, unless
    // its own address or network is at its cap (then it is refused anyway, and must not evict).
    if (connectionsOf(this.server).size <= this.p.maxConnections) return null;
    const capped = this.capRefusal(r);
    if (capped) return capped.message;
    if (this.shed("4.3.2", "Server busy, closing stalled connection", false, r)) return null;
    return "4.3.2 Too many connections, try again in a moment";
  }

  commandStarted(conn: LiveConnection): void {
    const r = this.byId.get(conn.session.id);
    if (r) r.progressAt = this.now();
  }

  commandDone(conn: LiveConnection): void {
    const r = this.byId.get(conn.session.id);
    if (!r) return;
    r.progressAt = this.now();
    r.owesSince = r.progressAt;
  }

  /** Closes (421) the session that has gone longest without progress, if any may be shed. */
  private shed(code: string, text: string, onlyPreMail: boolean, except?: Tracked): boolean {
    const t = this.now();
    const candidates = [...this.byId.values()]
      .filter((r) => r !== except && r.admitted && !r.conn._closing && !r.conn._closed)
      .filter((r) => !(onlyPreMail && r.mailSeen))
      .filter((r) => !waitingOnUs(r.conn) && !inData(r.conn))
      .map((r) => ({ key: r, preMail: !r.mailSeen, idleMs: t - r.progressAt }));
    const victim = chooseVictim(candidates);
    if (!victim) return false;
    victim.conn.send(421, `${code} ${text}`);
    return true;
  }

  /** The 421 for a newcomer whose address or network already holds its share, or null. */
  private capRefusal(r: Tracked): Error | null {
    if ((this.perIp.get(r.ip) ?? 0) >= this.p.maxPerIp) {
      return smtpError(421, "4.7.0", "Too many connections from your address");
    }
    if ((this.perNet.get(r.net) ?? 0) >= this.p.maxPerNet) {
      return smtpError(421, "4.7.0", "Too many connections from your network");
    }
    return null;
  }

  admit(session: SMTPServerSession): Error | null {
    const r = this.byId.get(session.id);
    if (!r) return null; // not accepted through the hook (cannot happen): leave it to the idle timeout
    const capped = this.capRefusal(r);
    if (capped) return capped;
    if (this.preMail >= this.p.maxPreMail && !this.shed("4.3.2", "Server busy, closing idle connection", true, r)) {
      return smtpError(421, "4.3.2", "Too many connections, try again in a moment");
    }
    r.admitted = true;
    r.progressAt = r.owesSince = this.now(); // the greeting is sent once admitted
    bump(this.perIp, r.ip, 1);
    bump(this.perNet, r.net, 1);
    this.preMail++;
    return null;
  }

  mailAccepted(session: SMTPServerSession): void {
    const r = this.byId.get(session.id);
    if (!r || r.mailSeen) return;
    r.mailSeen = true;
    if (r.admitted) this.preMail--;
  }

  closed(session: SMTPServerSession): void {
    const r = this.byId.get(session.id);
    if (!r) return;
    this.byId.delete(session.id);
    if (!r.admitted) return;
    bump(this.perIp, r.ip, -1);
    bump(this.perNet, r.net, -1);
    if (!r.mailSeen) this.preMail--;
  }

  /** Runs every deadline on every admitted session at time t. */
  sweep(t = this.now()): void {
    for (const r of this.byId.values()) {
      const c = r.conn;
      if (!r.admitted || c._closing || c._closed) continue;
      if (this.p.lifetimeMs && t - r.openedAt > this.p.lifetimeMs) {
        expire(r, "Connection time limit exceeded, closing connection");
        continue;
      }
      if (waitingOnUs(c)) {
        r.owesSince = t;
        r.data = null;
        continue;
      }
      if (inData(c)) {
        if (this.p.dataMinBytesPerSec) this.checkData(r, t);
        continue;
      }
      this.checkCommand(r, t);
    }
  }

  /** Between commands: the deadline for the first MAIL FROM, then the one for each command. */
  private checkCommand(r: Tracked, t: number): void {
    if (r.data) {
      r.data = null; // the message is in: the next command is owed from now
      r.owesSince = t;
    }
    if (this.p.mailDeadlineMs && !r.mailSeen && t - r.openedAt > this.p.mailDeadlineMs) {
      expire(r, "Too slow to begin a transaction, closing connection");
    } else if (this.p.commandTimeoutMs && t - r.owesSince > this.p.commandTimeoutMs) {
      expire(r, "Command timeout, closing connection");
    }
  }

  /** Counts the DATA rate over windows in which the client alone set the pace. */
  private checkData(r: Tracked, t: number): void {
    const c = r.conn;
    const parser = c._parser as { dataBytes: number };
    if (!r.data) {
      r.data = { start: t, bytes: parser.dataBytes, stalled: false };
      this.watchPauses(r);
    }
    const w = r.data;
    if ((c._dataStream || null)?.isPaused() || c._socket.isPaused()) w.stalled = true;
    if (t - w.start < this.p.dataRateWindowMs) return;
    const rate = ((parser.dataBytes - w.bytes) * 1000) / (t - w.start);
    if (!w.stalled && rate < this.p.dataMinBytesPerSec) {
      expire(r, `Data rate too low (${Math.floor(rate)} bytes/s), closing connection`);
      return;
    }
    r.data = { start: t, bytes: parser.dataBytes, stalled: false };
  }

  /**
   * Our own backpressure (the DATA memory budget, a slow spool write) pauses the stream and then
   * the socket: the client cannot send, so such a window proves nothing about it.
   */
  private watchPauses(r: Tracked): void {
    const c = r.conn;
    const mark = () => {
      if (r.data) r.data.stalled = true;
    };
    for (const s of [c._dataStream as Readable, c._socket]) {
      if (s && !this.watched.has(s)) {
        this.watched.add(s);
        s.on("pause", mark);
      }
    }
  }
}
