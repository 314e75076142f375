import type { TLSSocket } from "node:tls";
import { type PrismaClient, poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import { dependencyErrors, Registry } from "@mailroom/observability";
import { accountVolume, type TypedQueue } from "@mailroom/queues";
import { noTracing, recordFailure, type Tracing } from "@mailroom/tracing";
import {
  SMTPServer,
  type SMTPServerAddress,
  type SMTPServerDataStream,
  type SMTPServerOptions,
  type SMTPServerSession,
} from "smtp-server";
import { type Accepting, acceptInBatches, type BatchLimits, defaultBatchLimits } from "./accept-batch.ts";
import { type ConnectionGuard, type ConnectionPolicy, defaultPolicy, guardConnections } from "./connection-guard.ts";
import { drainSmtp, SHUTTING_DOWN } from "./drain.ts";
import { smtpError, useOwnEnhancedCodes } from "./enhanced-codes.ts";
import { unknownParameter } from "./esmtp-params.ts";
import { type IngestMetrics, observeIngest } from "./metrics.ts";
import { qualifyPostmaster } from "./postmaster.ts";
import { acceptProxyProtocol } from "./proxy-accept.ts";
import { type Lookup, lookupInBatches } from "./rcpt-lookup.ts";
import { type DataOptions, defaultDataOptions, type ReceivedBody, receiveData } from "./receive.ts";
import { receivedHeader, type TlsInfo } from "./received-header.ts";
import { decideRecipient, type Route } from "./recipients.ts";
import { type TransactionTraces, transactionTraces } from "./transaction-trace.ts";
import { OverAllotment } from "./usage.ts";

export type IngestOptions = {
  prisma: PrismaClient;
  queue: TypedQueue<"inbound">;
  logger: Logger;
  hostname: string;
  maxMessageBytes: number;
  maxRecipients: number;
  socketTimeoutMs: number;
  maxConnections: number;
  maxConnectionsPerIp: number;
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * On shutdown, how long open mail transactions may take to finish before they are cut (drain.ts;
   * the service derives it from SHUTDOWN_TIMEOUT_MS). Default 30 s.
   */
  drainBudgetMs?: number;
  /** Longest a connection may stay open, however busy (the idle limit is socketTimeoutMs). */
  connectionTimeoutMs?: number;
  /** Whose postmaster a bare `RCPT TO:<postmaster>` is (default: hostname); see postmaster.ts. */
  postmasterDomain?: string;
  /** PROXY protocol v1/v2 required on every connection, accepted only from these peers (proxy-accept.ts). */
  proxyProtocol?: { trustedCidrs: string[] };
  /** Slow-client defences beyond the caps above (defaults: connection-guard.ts defaultPolicy). */
  policy?: Partial<Omit<ConnectionPolicy, "maxConnections" | "maxPerIp" | "lifetimeMs">>;
  /** DATA streaming: memory budget across connections and slice size (default: receive.ts). */
  data?: DataOptions;
  /** Group commit of concurrent sessions' messages (accept-batch.ts); maxMessages 1: each alone. */
  acceptBatch?: BatchLimits;
  /** Where the SMTP metrics go (metrics.ts; served on HEALTH_PORT); absent: a private registry. */
  registry?: Registry;
  /** A span per mail transaction (transaction-trace.ts); absent: none. */
  tracing?: Tracing;
  /** Wraps the grouped RCPT lookup (service.ts: the route cache, route-cache.ts); absent: Postgres each time. */
  rcptLookup?: (grouped: Lookup) => Lookup;
};

export type IngestServer = SMTPServer & {
  /** Stops intake and lets open transactions finish (drain.ts); resolves once every session is gone. */
  drain: () => Promise<void>;
};

type RoutedAddress = SMTPServerAddress & { route?: Route };
type Done = (err?: Error | null) => void;

/**
 * What the session handlers share: the options, the grouped RCPT lookup and accept, and the
 * guard and metrics (both made from the server, so set once it exists, before it listens).
 */
type Ingest = {
  opts: IngestOptions;
  data: DataOptions;
  lookup: Lookup;
  spool: Accepting;
  closing: boolean;
  guard?: ConnectionGuard;
  metrics?: IngestMetrics;
  /** The TLS session of each session that did STARTTLS (for the Received header and the spool row). */
  tls: WeakMap<SMTPServerSession, TlsInfo>;
  /** Spans of the open transactions; undefined when tracing is off. */
  traces?: TransactionTraces;
};

/**
 * The SMTP ingest server (DESIGN.md §3.1): recipient checks at RCPT, the size limit at DATA, and
 * `250` only after the message and its recipients (the rule engine's work items) are committed
 * (spool.ts, grouped by accept-batch.ts).
 */
export function createIngestServer(opts: IngestOptions): IngestServer {
  useOwnEnhancedCodes();
  const db = poolOf(opts.prisma);
  const ingest: Ingest = {
    opts,
    data: opts.data ?? defaultDataOptions(),
    lookup: (opts.rcptLookup ?? ((grouped) => grouped))(lookupInBatches(db)),
    spool: acceptInBatches(
      db,
      {
        queue: opts.queue,
        // Each account's recent volume orders its jobs in the queue (fairness between accounts).
        volume: accountVolume(),
        // Accepted mail is safe in Postgres: the rule engine's sweeper queues these recipients later.
        failed: (err, recipients) =>
          dependencyErrors(opts.logger).report("redis", err, { source: "inbound job after 250", recipients }),
      },
      opts.acceptBatch ?? defaultBatchLimits,
      { written: (n) => ingest.metrics?.batch(n) },
    ),
    closing: false,
    tls: new WeakMap(),
    traces: transactionTraces(opts.tracing ?? noTracing),
  };
  const server = new SMTPServer({ ...serverOptions(opts), ...sessionHandlers(ingest) });

  // Deadlines, caps and shedding against slow clients (connection-guard.ts); the lifetime limit too.
  ingest.guard = guardConnections(server, {
    ...defaultPolicy(opts.maxConnections, opts.maxConnectionsPerIp),
    ...opts.policy,
    lifetimeMs: opts.connectionTimeoutMs ?? 0,
  });
  if (opts.proxyProtocol) acceptProxyProtocol(server, opts.proxyProtocol.trustedCidrs, opts.logger);
  // Sessions, reply codes, accepted messages, and a log line per 4xx/5xx reply.
  ingest.metrics = observeIngest(server, opts.registry ?? new Registry(), opts.logger, ingest.spool.waiting);
  // A bind failure before listening is main.ts's to report (one fatal line); after that, log and go on.
  server.on("error", (err) => server.server.listening && opts.logger.warn({ err: err.message }, "smtp error"));
  let drained: Promise<void> | undefined;
  return Object.assign(server, {
    drain: () => {
      ingest.closing = true;
      drained ??= drainSmtp(server, opts.drainBudgetMs ?? 30_000, opts.logger);
      return drained;
    },
  });
}

/** What smtp-server is told: names, limits, the extensions we offer, TLS if configured. */
function serverOptions(opts: IngestOptions): SMTPServerOptions {
  return {
    name: opts.hostname,
    banner: "mailroom ESMTP",
    size: opts.maxMessageBytes,
    maxClients: opts.maxConnections,
    maxRecipients: opts.maxRecipients,
    socketTimeout: opts.socketTimeoutMs,
    authOptional: true,
    disabledCommands: opts.tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    hideSTARTTLS: !opts.tls,
    hideENHANCEDSTATUSCODES: false,
    hideDSN: true,
    hidePIPELINING: false,
    hide8BITMIME: false,
    hideSMTPUTF8: false,
    ...(opts.tls ? { cert: opts.tls.cert, key: opts.tls.key } : {}),
    logger: false,
  };
}

const shuttingDown = () => Object.assign(new Error(SHUTTING_DOWN), { responseCode: 421 });

/** smtp-server's callbacks, one per SMTP step of a session. */
function sessionHandlers(ingest: Ingest): Partial<SMTPServerOptions> {
  return {
    onConnect(session, cb) {
      if (ingest.closing) return cb(shuttingDown());
      cb(ingest.guard?.admit(session) ?? undefined);
    },
    onClose(session) {
      ingest.guard?.closed(session);
      ingest.traces?.abandon(session);
    },
    onSecure(socket, session, cb) {
      // The negotiated protocol is the socket's (getCipher().version is the cipher's minimum).
      const tls = socket as unknown as TLSSocket;
      ingest.tls.set(session, { protocol: tls.getProtocol() ?? "unknown", cipher: tls.getCipher().name });
      cb();
    },
    onMailFrom(address, session, cb) {
      if (ingest.closing) return cb(shuttingDown());
      const bad = unknownParameter("MAIL", address.args);
      if (bad) return cb(bad);
      ingest.guard?.mailAccepted(session);
      ingest.traces?.begin(session);
      cb();
    },
    onRcptTo(address, session, cb) {
      // No closing check: a transaction begun before shutdown is finished (drain.ts).
      const bad = unknownParameter("RCPT", address.args);
      if (bad) return cb(bad);
      const span = ingest.traces?.child(session, "smtp rcpt");
      routeRecipient(ingest, address, (err) => {
        span?.setAttribute("smtp.reply_code", err ? ((err as { responseCode?: number }).responseCode ?? 451) : 250);
        span?.end();
        cb(err);
      });
    },
    onData(stream, session, cb) {
      receiveMessage(ingest, stream, session, cb);
    },
  };
}

/** RCPT: the recipient's route (recipients.ts), kept on the address for the accept, or the refusal. */
function routeRecipient(ingest: Ingest, address: RoutedAddress, cb: Done): void {
  const { opts } = ingest;
  const rcpt = qualifyPostmaster(address.address, opts.postmasterDomain ?? opts.hostname);
  decideRecipient(ingest.lookup, rcpt).then(
    (d) => {
      if (!d.ok) {
        if (rcpt !== address.address)
          opts.logger.warn({ rcpt }, "bare postmaster refused: its domain is not hosted here");
        return cb(smtpError(d.code, d.enhanced, d.message));
      }
      address.route = d.route;
      cb();
    },
    (err) => {
      // Rate-limited: with Postgres down every RCPT of every session lands here.
      dependencyErrors(opts.logger).report("postgres", err, { source: "recipient lookup" });
      cb(smtpError(451, "4.3.0", "Temporary failure, try again later"));
    },
  );
}

/**
 * DATA goes to Postgres slice by slice as it arrives (receive.ts), so memory stays bounded per
 * connection and across them. Past the limit it is read to the end and nothing is kept.
 */
function receiveMessage(
  ingest: Ingest,
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
  cb: (err?: Error | null, message?: string) => void,
): void {
  const { maxMessageBytes, prisma } = ingest.opts;
  // The accept latency runs from the final dot (the sender waits from then on) to the reply.
  let endOfData = 0;
  stream.once("end", () => {
    endOfData = performance.now();
  });
  const reply = tracedReply(ingest, session, cb);
  const dataSpan = ingest.traces?.child(session, "smtp data");
  receiveData(stream, { db: poolOf(prisma), maxBytes: maxMessageBytes, ...ingest.data }).then(
    (got) => {
      dataSpan?.end();
      if (got.kind === "too-big") {
        return reply(smtpError(552, "5.3.4", `Message too big for system (limit ${maxMessageBytes} bytes)`));
      }
      const accepted = got.kind === "ok" ? accept(ingest, session, got.body) : Promise.reject(got.error);
      accepted.then(
        (spoolId) => {
          ingest.metrics?.acceptLatency((performance.now() - endOfData) / 1000);
          reply(null, `2.0.0 Ok: queued as ${spoolId}`);
        },
        (err) => reply(refusal(ingest.opts.logger, err)),
      );
    },
    (err: Error) => {
      if (dataSpan) recordFailure(dataSpan, err);
      dataSpan?.end();
      reply(err); // the client went away mid-DATA; its slices are already deleted
    },
  );
}

/** The DATA callback, ending the transaction's span with the reply's code (tracing on only). */
function tracedReply(
  ingest: Ingest,
  session: SMTPServerSession,
  cb: (err?: Error | null, message?: string) => void,
): (err?: Error | null, message?: string) => void {
  const traces = ingest.traces;
  if (!traces) return cb;
  return (err, message) => {
    const code = err ? ((err as { responseCode?: number }).responseCode ?? 451) : 250;
    const spoolId = message ? /queued as (\S+)/.exec(message)?.[1] : undefined;
    traces.end(session, { code, ...(spoolId ? { spoolId } : {}), ...(err ? { error: err.message } : {}) });
    cb(err, message);
  };
}

/** The reply to a message that could not be made durable. */
function refusal(logger: Logger, err: unknown): Error {
  // The allotment ran out between RCPT and now (another session took the rest): the whole message
  // is deferred; on retry RCPT refuses this account's recipients alone.
  if (err instanceof OverAllotment) {
    return smtpError(452, "4.2.2", "Mailbox over its monthly allotment, try again later");
  }
  logger.error({ err: (err as Error).message }, "could not spool message");
  return smtpError(451, "4.3.0", "Temporary failure storing the message, try again later");
}

/** Spools a received message for the routes found at RCPT; resolves with its spool id once durable. */
async function accept(ingest: Ingest, session: SMTPServerSession, body: ReceivedBody): Promise<string> {
  const routes = (session.envelope.rcptTo as RoutedAddress[]).flatMap((a) => (a.route ? [a.route] : []));
  const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
  const tls = ingest.tls.get(session) ?? null;
  const remoteIp = session.remoteAddress || null;
  const helo = session.hostNameAppearsAs || null;
  const span = ingest.traces?.child(session, "spool commit", {
    "mailroom.spool_id": body.spoolId,
    "messaging.message.body.size": body.size,
    "smtp.recipients": routes.length,
  });
  try {
    const spoolId = await ingest.spool.accept({
      body,
      received: receivedHeader({
        helo,
        // smtp-server's reverse lookup, or `[address]` when there was no name.
        reverseName: session.clientHostname && !session.clientHostname.startsWith("[") ? session.clientHostname : null,
        clientIp: remoteIp,
        by: ingest.opts.hostname,
        esmtp: session.openingCommand === "EHLO",
        tls,
        spoolId: body.spoolId,
        recipients: routes.map((r) => r.recipient),
        at: new Date(),
      }),
      mailFrom,
      remoteIp,
      helo,
      tls,
      routes,
      traceparent: ingest.traces?.traceparent(session) ?? null,
    });
    ingest.opts.logger.info({ spoolId, bytes: body.size, recipients: routes.length }, "message accepted");
    ingest.metrics?.accepted(body.size);
    return spoolId;
  } catch (err) {
    if (span) recordFailure(span, err);
    throw err;
  } finally {
    span?.end();
    body.release();
  }
}
