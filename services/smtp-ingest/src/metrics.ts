import type { Logger } from "@mailroom/log";
import { Counter, Gauge, Histogram, type Registry } from "@mailroom/observability";
import type { SMTPServer } from "smtp-server";
import { SMTPConnection } from "smtp-server/lib/smtp-connection.js";

export type IngestMetrics = {
  /** A message was made durable and answered 250 (one per DATA, whatever its recipient count). */
  accepted(bytes: number): void;
  /** One accepting statement wrote `messages` messages (group commit, accept-batch.ts). */
  batch(messages: number): void;
};

type Observer = { reply(conn: Conn, code: number, text: unknown): void };
type Conn = { _server: object; remoteAddress?: string; session?: { id?: string } };

const observers = new WeakMap<object, Observer>();
let patched = false;

/**
 * SMTP sessions, every reply code sent, and messages accepted, on `registry`; a log line for each
 * 4xx/5xx reply (what a sender was refused, and why). smtp-server writes every reply through one
 * method, `SMTPConnection#send`: wrapped once (servers without an observer are untouched), it sees
 * the replies of our callbacks and smtp-server's own (syntax errors, too many clients, timeouts).
 */
export function observeIngest(
  server: SMTPServer,
  registry: Registry,
  logger: Logger,
  acceptWaiting: () => number = () => 0,
): IngestMetrics {
  const sessions = new Counter({
    name: "mailroom_smtp_sessions_total",
    help: "SMTP connections accepted",
    registers: [registry],
  });
  new Gauge({
    name: "mailroom_smtp_sessions_active",
    help: "SMTP connections open now",
    registers: [registry],
    collect() {
      this.set((server as unknown as { connections: Set<unknown> }).connections.size);
    },
  });
  const replies = new Counter({
    name: "mailroom_smtp_replies_total",
    help: "SMTP replies sent, by reply code",
    labelNames: ["code"],
    registers: [registry],
  });
  const accepted = new Counter({
    name: "mailroom_smtp_messages_accepted_total",
    help: "Messages accepted (spooled durably and answered 250)",
    registers: [registry],
  });
  const acceptedBytes = new Counter({
    name: "mailroom_smtp_accepted_bytes_total",
    help: "Bytes of the messages accepted",
    registers: [registry],
  });
  new Gauge({
    name: "mailroom_smtp_accept_waiting",
    help: "Messages received in full and waiting for the accepting statement in flight (group commit)",
    registers: [registry],
    collect() {
      this.set(acceptWaiting());
    },
  });
  const batches = new Histogram({
    name: "mailroom_smtp_accept_batch_messages",
    help: "Messages written per accepting statement and commit (concurrent sessions grouped)",
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [registry],
  });
  server.server.on("connection", () => sessions.inc());
  observers.set(server, {
    reply(conn, code, text) {
      replies.inc({ code: String(code) });
      if (code < 400) return;
      const reply = (Array.isArray(text) ? text.join(" ") : String(text ?? "")).slice(0, 300);
      logger.info(
        { sessionId: conn.session?.id, remoteIp: conn.remoteAddress, code, reply },
        `smtp rejection ${code}: ${reply}`,
      );
    },
  });
  patchSend();
  return {
    accepted(bytes) {
      accepted.inc();
      acceptedBytes.inc(bytes);
    },
    batch(messages) {
      batches.observe(messages);
    },
  };
}

function patchSend(): void {
  if (patched) return;
  patched = true;
  const proto = SMTPConnection.prototype as unknown as {
    send(this: Conn, code: number, data?: unknown, context?: unknown): void;
  };
  const send = proto.send;
  proto.send = function (code, data, context) {
    try {
      observers.get(this._server)?.reply(this, code, data);
    } catch {
      // Metrics and logging never break a session.
    }
    return send.call(this, code, data, context);
  };
}
