import { type Attributes, noTracing, recordFailure, type Span, SpanKind, type Tracing } from "@mailroom/tracing";
import type { SMTPServerSession } from "smtp-server";

/** How a transaction ended: the code of the reply to its DATA (or why it had none). */
export type TransactionEnd = { code: number; spoolId?: string; bytes?: number; recipients?: number; error?: string };

/**
 * The root span of each mail transaction, "smtp accept", from the accepted MAIL FROM to the reply
 * to its DATA (the 250 comes after the spool commit), with a child per RCPT lookup, for receiving
 * DATA and for the spool commit. Its traceparent is stored on the spool row, so the rule engine's
 * span of the message joins the same trace whoever queues the job (the ingest or a sweeper). A
 * transaction abandoned (RSET then a new MAIL FROM, QUIT, a dropped connection) ends its span
 * without a reply code.
 */
export type TransactionTraces = {
  begin(session: SMTPServerSession): void;
  /** A child of the open transaction's span (none open: a no-op span). */
  child(session: SMTPServerSession, name: string, attributes?: Attributes): Span;
  traceparent(session: SMTPServerSession): string | null;
  end(session: SMTPServerSession, how: TransactionEnd): void;
  abandon(session: SMTPServerSession): void;
};

/** Undefined when tracing is off: the server's handlers then skip every call (`traces?.…`). */
export function transactionTraces(tracing: Tracing): TransactionTraces | undefined {
  if (!tracing.enabled) return undefined;
  const open = new WeakMap<SMTPServerSession, Span>();
  const abandon = (session: SMTPServerSession) => {
    const span = open.get(session);
    if (!span) return;
    open.delete(session);
    span.setAttribute("smtp.outcome", "abandoned");
    span.end();
  };
  return {
    begin(session) {
      abandon(session);
      const attributes: Attributes = { "smtp.session_id": session.id, "network.peer.address": session.remoteAddress };
      if (session.hostNameAppearsAs) attributes["smtp.helo"] = session.hostNameAppearsAs;
      open.set(session, tracing.start("smtp accept", { parent: null, kind: SpanKind.SERVER, attributes }));
    },
    child: (session, name, attributes) => {
      const parent = open.get(session);
      return parent ? tracing.start(name, { parent, attributes }) : noTracing.start(name);
    },
    traceparent: (session) => {
      const span = open.get(session);
      return span ? tracing.traceparent(span) : null;
    },
    end(session, how) {
      const span = open.get(session);
      if (!span) return;
      open.delete(session);
      span.setAttribute("smtp.reply_code", how.code);
      if (how.spoolId) span.setAttribute("mailroom.spool_id", how.spoolId);
      if (how.bytes !== undefined) span.setAttribute("messaging.message.body.size", how.bytes);
      if (how.recipients !== undefined) span.setAttribute("smtp.recipients", how.recipients);
      if (how.error) recordFailure(span, new Error(how.error));
      span.end();
    },
    abandon,
  };
}
