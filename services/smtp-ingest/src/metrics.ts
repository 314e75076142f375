import type { Logger } from "@mailroom/log";
import { Counter, Gauge, Histogram, type Registry } from "@mailroom/observability";
import type { SMTPServer } from "smtp-server";
import { SMTPConnection } from "smtp-server/lib/smtp-connection.js";
import { connectionsOf } from "./smtp-internals.ts";

export type IngestMetrics = {
  /** A message was made durable and answered 250 (one per DATA, whatever its recipient count). */
  accepted(bytes: number): void;
  /** One accepting statement wrote `messages` messages (group commit, accept-batch.ts). */
  batch(messages: number): void;
  /** Seconds from the end of a message's DATA (the final dot) to its 250. */
  acceptLatency(seconds: number): void;
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
  const c = collectors(server, registry, acceptWaiting);
  server.server.on("connection", () => c.sessions.inc());
  observers.set(server, {
    reply(conn, code, text) {
      c.replied(code);
      if (code >= 400) logRejection(logger, conn, code, text);
    },
  });
  patchSend();
  return {
    accepted(bytes) {
      c.accepted.inc();
      c.acceptedBytes.inc(bytes);
    },
    batch(messages) {
      c.batches.observe(messages);
    },
    acceptLatency(seconds) {
      c.acceptDuration.observe(seconds);
    },
  };
}

/** The metrics, registered in the order /metrics lists them. */
function collectors(server: SMTPServer, registry: Registry, acceptWaiting: () => number) {
  const counter = (name: string, help: string) => new Counter({ name, help, registers: [registry] });
  const sessions = counter("mailroom_smtp_sessions_total", "SMTP connections accepted");
  gauge(registry, "mailroom_smtp_sessions_active", "SMTP connections open now", () => connectionsOf(server).size);
  const replied = replyCounter(registry);
  const accepted = counter(
    "mailroom_smtp_messages_accepted_total",
    "Messages accepted (spooled durably and answered 250)",
  );
  const acceptedBytes = counter("mailroom_smtp_accepted_bytes_total", "Bytes of the messages accepted");
  gauge(
    registry,
    "mailroom_smtp_accept_waiting",
    "Messages received in full and waiting for the accepting statement in flight (group commit)",
    acceptWaiting,
  );
  const batches = new Histogram({
    name: "mailroom_smtp_accept_batch_messages",
    help: "Messages written per accepting statement and commit (concurrent sessions grouped)",
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [registry],
  });
  const acceptDuration = new Histogram({
    name: "mailroom_smtp_accept_duration_seconds",
    help: "Time from the end of a message's DATA (the final dot) to its 250: the last slice written, the accepting commit",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return { sessions, replied, accepted, acceptedBytes, batches, acceptDuration };
}

/** A gauge read at each scrape. */
function gauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/**
 * Replies by code. Every reply of every session passes here (four or more per message), so it adds
 * to a plain count per code and the counter takes the counts at each scrape (collect), instead of
 * hashing a label set per reply.
 */
function replyCounter(registry: Registry): (code: number) => void {
  const unseen = new Map<number, number>();
  new Counter({
    name: "mailroom_smtp_replies_total",
    help: "SMTP replies sent, by reply code",
    labelNames: ["code"],
    registers: [registry],
    collect() {
      for (const [code, n] of unseen) if (n > 0) this.inc({ code: String(code) }, n);
      unseen.clear();
    },
  });
  return (code) => {
    unseen.set(code, (unseen.get(code) ?? 0) + 1);
  };
}

function logRejection(logger: Logger, conn: Conn, code: number, text: unknown): void {
  const reply = (Array.isArray(text) ? text.join(" ") : String(text ?? "")).slice(0, 300);
  logger.info(
    { sessionId: conn.session?.id, remoteIp: conn.remoteAddress, code, reply },
    `smtp rejection ${code}: ${reply}`,
  );
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

/**
 * The RCPT route cache (route-cache.ts): lookups answered from it, read from Postgres on a miss, or
 * read from Postgres because its notifications are not being heard (`bypass`); and whether they are.
 */
export function observeRouteCache(
  registry: Registry,
  cache: { counts: Record<"hit" | "miss" | "bypass", number>; connected: boolean },
): void {
  const seen = { hit: 0, miss: 0, bypass: 0 };
  new Counter({
    name: "mailroom_smtp_rcpt_cache_lookups_total",
    help: "RCPT lookups by how they were answered: hit (cached), miss (read and kept), bypass (read: notifications not heard)",
    labelNames: ["result"],
    registers: [registry],
    collect() {
      for (const result of ["hit", "miss", "bypass"] as const) {
        const n = cache.counts[result] - seen[result];
        if (n > 0) this.inc({ result }, n);
        seen[result] = cache.counts[result];
      }
    },
  });
  new Gauge({
    name: "mailroom_smtp_rcpt_cache_listening",
    help: "1 while the RCPT route cache hears Postgres's change notifications (cache in use), else 0",
    registers: [registry],
    collect() {
      this.set(cache.connected ? 1 : 0);
    },
  });
}
