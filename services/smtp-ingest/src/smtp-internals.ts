import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import type { SMTPServer, SMTPServerSession } from "smtp-server";
import { SMTPConnection } from "smtp-server/lib/smtp-connection.js";

/**
 * The one place that reaches into smtp-server 3.21's private connection state (it offers no hooks
 * for per-phase deadlines, shedding or the greeting pause). Checked against
 * node_modules/smtp-server/dist/esm/smtp-connection.js; an upgrade must re-check these fields.
 */
export type LiveConnection = {
  session: SMTPServerSession;
  remoteAddress: string;
  _socket: Socket;
  /** The command parser; in data mode while the message body is being received. */
  _parser: false | { _dataMode: boolean; dataBytes: number };
  /** Set from DATA until the onData handler has answered (after the final dot it waits on us). */
  _dataStream: false | null | Readable;
  /** A command handler (ours: onMailFrom, onRcptTo…) has not called back yet. */
  _handlerPending: boolean;
  _closing: boolean;
  _closed: boolean;
  send(code: number, text: string, context?: unknown): void;
  close(): void;
};

export type ConnectionHooks = {
  /** Pause before the banner; a client talking before it is refused (smtp-server's 100 ms). */
  greetingDelayMs: number;
  /**
   * A socket was accepted and already counts in `server.connections`, in place of smtp-server's
   * `maxClients` check: the moment to free a place by shedding another session. Returns the text
   * of the 421 to refuse it with (enhanced code first), or null to go on to the greeting.
   */
  accepted(conn: LiveConnection): string | null;
  /** A whole command line arrived (trickled bytes before it are not progress). */
  commandStarted(conn: LiveConnection): void;
  /** Its reply was written: from now on the client owes us the next command. */
  commandDone(conn: LiveConnection): void;
};

type Internal = LiveConnection & {
  _server: SMTPServer;
  _setListeners(cb: () => void): void;
  connectionReady(): void;
};
type Proto = {
  init(this: Internal): void;
  _onCommand(this: Internal, command: Buffer, callback?: () => void): void;
};

const hooks = new WeakMap<object, ConnectionHooks>();
let patched = false;

/** Gives `server`'s connections the hooks (prototype patched once; other servers are untouched). */
export function installConnectionHooks(server: SMTPServer, h: ConnectionHooks): void {
  hooks.set(server, h);
  if (patched) return;
  patched = true;
  const proto = SMTPConnection.prototype as unknown as Proto;
  const init = proto.init;
  const onCommand = proto._onCommand;
  // smtp-server's init() with the hook in place of its maxClients check and a configurable pause.
  proto.init = function () {
    const h = hooks.get(this._server);
    if (!h) return init.call(this);
    this._setListeners(() => {
      const refusal = h.accepted(this);
      if (refusal) return this.send(421, refusal);
      setTimeout(() => this.connectionReady(), h.greetingDelayMs).unref();
    });
  };
  proto._onCommand = function (command, callback) {
    const h = hooks.get(this._server);
    if (!h) return onCommand.call(this, command, callback);
    h.commandStarted(this);
    onCommand.call(this, command, () => {
      h.commandDone(this);
      callback?.();
    });
  };
}

/** The open connections of a server (smtp-server's own set). */
export const connectionsOf = (server: SMTPServer): Set<LiveConnection> =>
  (server as unknown as { connections: Set<LiveConnection> }).connections;

/** Sockets accepted before a session exists (waiting for the PROXY header or the TLS handshake). */
export function pendingSockets(server: SMTPServer): Socket[] {
  const pending = (server as unknown as { _pendingSockets?: Map<Socket, Socket> })._pendingSockets;
  return pending ? [...pending.values()] : [];
}

/** What smtp-server's connect() takes from a PROXY reader: the session id and the client behind the proxy. */
export type ProxiedSocket = { id: string; remoteAddress?: string; remotePort?: number };
export type ProxyReader = (socket: Socket, done: (err: Error | null, session?: ProxiedSocket) => void) => void;

/**
 * Replaces smtp-server's PROXY header reader on this server (its `_handleProxy`, v1 only) and makes
 * every socket wait for it (`_expectsProxyHeader`), so its pre-session guard (maxClients for sockets
 * without a session, socketTimeout) applies. On an error the reader has closed the socket and
 * smtp-server does not start a session.
 */
export function installProxyHandler(server: SMTPServer, read: ProxyReader): void {
  Object.assign(server as object, { _expectsProxyHeader: () => true, _handleProxy: read });
}
