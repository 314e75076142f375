import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createCursorCodec, createPrisma, type PrismaClient, poolOf } from "@mailroom/db";
import { type DomainDns, startVerifier } from "@mailroom/domain-verification";
import { createEgressResolver } from "@mailroom/egress";
import { createLogger } from "@mailroom/log";
import { createEventPublisher, createQueue, createRedis, type TypedQueue } from "@mailroom/queues";
import { attachmentLinks, createByteStore, type S3Settings } from "@mailroom/storage";
import { createTestEnv, type TestEnv } from "@mailroom/testing";
import type { Express } from "express";
import { createApp } from "../services/api/src/app.ts";
import { createEventHub, type EventHub } from "../services/api/src/events/hub.ts";
import { createDestinationCheck } from "../services/api/src/lib/destinations.ts";
import { outboundEnqueuer } from "../services/api/src/lib/outbound-queue.ts";
import type { RateLimitConfig } from "../services/api/src/lib/rate-limit.ts";
import { deliveryEnqueuer } from "../services/api/src/ops/deliveries.ts";
import { createParser } from "../services/rule-engine/src/parse.ts";
import type { DnsResolve } from "../services/rule-engine/src/verdicts.ts";
import { startRuleEngine } from "../services/rule-engine/src/worker.ts";
import { createIngestServer } from "../services/smtp-ingest/src/server.ts";
import { createSender } from "../services/webhook-dispatcher/src/send.ts";
import { startDispatcher } from "../services/webhook-dispatcher/src/worker.ts";
import { runCommand } from "../tools/admin/src/commands.ts";

export type Stack = {
  env: TestEnv;
  prisma: PrismaClient;
  apiUrl: string;
  /** The API's express app (for walking its routes). */
  app: Express;
  smtpPort: number;
  inboundQueue: TypedQueue<"inbound">;
  deliveryQueue: TypedQueue<"delivery">;
  /** Queue `forward`: deliveries to email destinations; a test starts the outbound sender on it. */
  forwardQueue: TypedQueue<"forward">;
  /** Queue `outbound`: the API enqueues sends here; a test starts the outbound sender on it. */
  outboundQueue: TypedQueue<"outbound">;
  /** The API's live-event hub (wait_for_email, GET /events). */
  events: EventHub;
  /** Admin CLI commands, run in-process against this stack's database. */
  admin(...argv: string[]): Promise<Record<string, unknown>>;
  /** A new account with a key; returns the key and a fetch helper bound to it. */
  account(opts?: { plan?: "free" | "scale"; scope?: "read" | "full" }): Promise<TestAccount>;
  close(): Promise<void>;
};

export type TestAccount = {
  accountId: string;
  key: string;
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }>;
};

export type StackOptions = {
  allowPrivateDestinations?: boolean;
  backoffUnitMs?: number;
  /** DNS for SPF/DKIM/DMARC; default answers nothing (fast NXDOMAIN-like failure, no network). */
  authResolver?: DnsResolve;
  maxMessageBytes?: number;
  /** API rate limit; default: fixed window, 100 000 requests per minute (never reached by a test). */
  rateLimit?: Partial<RateLimitConfig>;
  services?: { ingest?: boolean; ruleEngine?: boolean; dispatcher?: boolean; domainVerifier?: boolean };
  /** DNS for domain verification (POST /domains/{id}/verify and the verifier loop); default: the system's. */
  domainDns?: DomainDns;
  /** The verifier loop's clock (move it ahead to skip the 1 m first-check delay) and poll interval. */
  verifier?: { now?: () => Date; pollIntervalMs?: number };
  /** DNS servers behind the SSRF guard (endpoint create/update, test, delivery); default: the system's. */
  egressDnsServers?: string[];
  /** Dispatcher tuning (defaults: 4 in flight, 4 per endpoint, sweep every 30 s for jobs overdue by 30 s). */
  dispatcher?: { concurrency?: number; endpointConcurrency?: number; sweepIntervalMs?: number; sweepGraceMs?: number };
  /** Heartbeat interval of GET /events streams (default 15 s). */
  eventsHeartbeatMs?: number;
  /** BYTE_STORE=s3 against this store (and SIGNED_URL_TTL_SECONDS); default: bytes in Postgres. */
  s3?: { settings: S3Settings; signedUrlTtlSeconds?: number };
  /** SIGNED_URL_SECRET: with Postgres bytes, payload links the API serves without a key. */
  signedUrlSecret?: string;
};

const noDns: DnsResolve = async () => {
  throw Object.assign(new Error("no DNS in tests"), { code: "ENOTFOUND" });
};

/**
 * Every service of mailroom in this process, wired as their main.ts files wire them, on a fresh
 * database and Redis prefix, listening on ephemeral ports.
 */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const env = await createTestEnv();
  const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
  const prisma = createPrisma(env.databaseUrl, { max: 5 });
  const producer = createRedis(env.redisUrl, "producer");
  const worker = createRedis(env.redisUrl, "worker");
  const inboundQueue = createQueue("inbound", { connection: producer, prefix: env.redisPrefix });
  const deliveryQueue = createQueue("delivery", { connection: producer, prefix: env.redisPrefix });
  const forwardQueue = createQueue("forward", { connection: producer, prefix: env.redisPrefix });
  const outboundQueue = createQueue("outbound", { connection: producer, prefix: env.redisPrefix });
  const allowPrivate = opts.allowPrivateDestinations ?? true;
  const publicApiUrl = "http://127.0.0.1:0";
  // As main.ts builds it: one resolver behind the API's SSRF checks and the dispatcher's deliveries.
  const egressResolver = createEgressResolver(opts.egressDnsServers);

  // Live events as in production: the rule engine and dispatcher publish, the API's hub subscribes.
  const events = createEventHub(producer, env.redisPrefix, logger, { heartbeatMs: opts.eventsHeartbeatMs ?? 15_000 });
  const publishEvent = createEventPublisher(producer, env.redisPrefix, () => undefined);
  const bytes = opts.s3 ? createByteStore({ backend: "s3", s3: opts.s3.settings }, poolOf(prisma)) : undefined;
  const withBytes = bytes ? { bytes } : {};
  const app = createApp({
    prisma,
    ...withBytes,
    ...(opts.signedUrlSecret ? { signedUrlSecret: opts.signedUrlSecret } : {}),
    redis: producer,
    events,
    logger,
    bodyLimit: "1mb",
    rateLimit: { limit: 100_000, windowSeconds: 60, prefix: env.redisPrefix, ...opts.rateLimit },
    cursors: createCursorCodec("test-cursor-secret"),
    checkDestination: createDestinationCheck({ allowPrivate, resolver: egressResolver }),
    egressResolver,
    enqueueOutbound: outboundEnqueuer(outboundQueue),
    enqueueDelivery: deliveryEnqueuer({ delivery: deliveryQueue, forward: forwardQueue }),
    ...(opts.domainDns ? { domainDns: opts.domainDns } : {}),
    config: {
      mxHost: "mx.mailroom.test",
      dkimDomain: "mailroom.test",
      publicApiUrl,
      allowPrivateDestinations: allowPrivate,
    },
  });
  const http: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const apiUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  const services = { ingest: true, ruleEngine: true, dispatcher: true, domainVerifier: false, ...opts.services };
  const closers: (() => Promise<unknown>)[] = [];
  let smtpPort = 0;
  if (services.ingest) {
    const smtp = createIngestServer({
      prisma,
      queue: inboundQueue,
      logger,
      hostname: "mx.mailroom.test",
      maxMessageBytes: opts.maxMessageBytes ?? 26_214_400,
      maxRecipients: 100,
      socketTimeoutMs: 30_000,
      maxConnections: 100,
      maxConnectionsPerIp: 50,
      closeTimeoutMs: 500,
    });
    await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()));
    smtpPort = (smtp.server.address() as AddressInfo).port;
    closers.push(() => new Promise<void>((resolve) => smtp.close(() => resolve())));
  }
  if (services.ruleEngine) {
    // As main.ts wires it: the parser is created by the composition root and closed after the worker.
    const parser = createParser({ threads: 2 });
    const engine = startRuleEngine({
      prisma,
      parser,
      logger,
      deliveryQueue,
      forwardQueue,
      inboundQueue,
      connection: worker,
      prefix: env.redisPrefix,
      concurrency: 2,
      sweepIntervalMs: 3_600_000,
      resolver: opts.authResolver ?? noDns,
      mtaHostname: "mx.mailroom.test",
      events: publishEvent,
      ...withBytes,
    });
    closers.push(() => engine.close().finally(() => parser.close()));
  }
  if (services.dispatcher) {
    const dispatcher = startDispatcher({
      prisma,
      queue: deliveryQueue,
      logger,
      send: createSender({ allowPrivate, resolver: egressResolver }),
      publicApiUrl,
      backoffUnitMs: opts.backoffUnitMs ?? 60_000,
      connection: worker,
      prefix: env.redisPrefix,
      concurrency: opts.dispatcher?.concurrency ?? 4,
      endpointConcurrency: opts.dispatcher?.endpointConcurrency ?? 4,
      slotsRedis: producer,
      sweepIntervalMs: opts.dispatcher?.sweepIntervalMs ?? 30_000,
      sweepGraceMs: opts.dispatcher?.sweepGraceMs ?? 30_000,
      events: publishEvent,
      ...(bytes ? { attachmentLinks: attachmentLinks(bytes, opts.s3?.signedUrlTtlSeconds ?? 3600) } : {}),
      ...(opts.signedUrlSecret
        ? {
            attachmentLinks: attachmentLinks(createByteStore({ backend: "postgres" }, poolOf(prisma)), 3600, {
              publicApiUrl: apiUrl,
              secret: opts.signedUrlSecret,
            }),
          }
        : {}),
    });
    closers.push(() => dispatcher.close());
  }

  if (services.domainVerifier) {
    if (!opts.domainDns) throw new Error("startStack: services.domainVerifier needs domainDns (a loopback DNS server)");
    const verifier = startVerifier({
      prisma,
      logger,
      dns: opts.domainDns,
      ...(opts.verifier?.now ? { now: opts.verifier.now } : {}),
      pollIntervalMs: opts.verifier?.pollIntervalMs ?? 100,
      batchSize: 20,
      concurrency: 4,
      leaseMs: 60_000,
    });
    closers.push(() => verifier.close());
  }

  const admin = async (...argv: string[]) => {
    const r = await runCommand(prisma, argv);
    if (!r.ok) throw new Error(`admin ${argv.join(" ")}: ${r.error}`);
    return r.value;
  };

  return {
    env,
    prisma,
    apiUrl,
    app,
    smtpPort,
    inboundQueue,
    deliveryQueue,
    forwardQueue,
    outboundQueue,
    events,
    admin,
    async account({ plan = "free", scope = "full" } = {}) {
      const acc = await admin("accounts", "create", "--name", "test", "--plan", plan);
      const key = await admin("keys", "create", "--account", String(acc.id), "--scope", scope);
      return {
        accountId: String(acc.id),
        key: String(key.key),
        async api(method, path, body) {
          const res = await fetch(`${apiUrl}${path}`, {
            method,
            headers: {
              authorization: `Bearer ${key.key}`,
              ...(body !== undefined ? { "content-type": "application/json" } : {}),
            },
            ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
          });
          const text = await res.text();
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {
            /* not JSON: keep the text */
          }
          return { status: res.status, body: parsed, headers: res.headers };
        },
      };
    },
    async close() {
      for (const c of closers.reverse()) await c().catch(() => undefined);
      await events.close();
      await new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      });
      await inboundQueue.close();
      await deliveryQueue.close();
      await forwardQueue.close();
      await outboundQueue.close();
      producer.disconnect();
      worker.disconnect();
      bytes?.close();
      await prisma.$disconnect();
      await env.cleanup();
    },
  };
}
