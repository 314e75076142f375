import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createCursorCodec, poolOf } from "@mailroom/db";
import { createDomainDns, type DomainDns } from "@mailroom/domain-verification";
import { createEgressResolver } from "@mailroom/egress";
import {
  type BootDeps,
  bootProducer,
  type ProducerBoot,
  type RunningService,
  serviceStarted,
} from "@mailroom/observability";
import { fatal, listen } from "@mailroom/runtime";
import { type ByteStore, byteStoreConfig, createByteStore } from "@mailroom/storage";
import type { Express } from "express";
import { createApp } from "./app.ts";
import { createMailSanitizer, type MailSanitizer } from "./console/mail-html.ts";
import type { ApiEnv } from "./env.ts";
import { createEventHub, type EventHub } from "./events/hub.ts";
import { trustedProxyEntries } from "./lib/client-address.ts";
import { createDestinationCheck } from "./lib/destinations.ts";
import { outboundEnqueuer } from "./lib/outbound-queue.ts";
import { deliveryEnqueuer } from "./ops/deliveries.ts";

/** What a test (the in-process stack) hands in instead of what the API would make from its env. */
export type ApiServiceDeps = BootDeps & {
  /** DNS for domain verification; absent: DNS_SERVERS. */
  domainDns?: DomainDns;
  /** Heartbeat interval of GET /events streams (default 15 s). */
  eventsHeartbeatMs?: number;
};

/** Shutdown in order: readiness, event streams, HTTP, queues, byte store, then what the boot made. */
export type ApiService = RunningService & {
  app: Express;
  server: Server;
  /** Where it listens, e.g. http://127.0.0.1:3000 (the port chosen when API_PORT is 0). */
  url: string;
  events: EventHub;
};

/** The API process: REST, MCP and the console on API_PORT, wired once for main.ts and the test stack. */
export async function startApiService(env: ApiEnv, deps: ApiServiceDeps = {}): Promise<ApiService> {
  // Listen only once Postgres and Redis answer (the rate limiter could not count a request before);
  // past STARTUP_TIMEOUT_MS, or with the port taken, main.ts exits with one line instead of limping on.
  const boot = deps.boot ?? (await bootProducer("api", env));
  const { logger, redisConnections, producerRedis: redis } = boot;
  const queues = {
    outbound: redisConnections.queue("outbound", redis),
    delivery: redisConnections.queue("delivery", redis),
    forward: redisConnections.queue("forward", redis),
  };
  const heartbeat = deps.eventsHeartbeatMs ? { heartbeatMs: deps.eventsHeartbeatMs } : {};
  const events = createEventHub(redis, env.REDIS_PREFIX, logger, heartbeat);
  const bytes = createByteStore(byteStoreConfig(env), poolOf(boot.prisma));
  const mailHtml = createMailSanitizer();
  const app = apiApp(env, { boot, bytes, events, queues, mailHtml, domainDns: deps.domainDns });
  const server = createServer(app);
  await listen(server, env.API_PORT, env.API_HOST, "API_PORT");
  const url = `http://${env.API_HOST}:${(server.address() as AddressInfo).port}`;
  logger.info({ host: env.API_HOST, port: env.API_PORT }, `api listening on ${url}`);
  server.on("error", (err) => fatal(logger, err));
  const service = serviceStarted(boot, deps.boot, [
    // Open event streams and waits end first, so the HTTP server can close without waiting on them.
    { name: "events", close: () => events.close() },
    { name: "http", close: () => closeServer(server) },
    { name: "queue", close: () => Promise.all(Object.values(queues).map((q) => q.close())) },
    { name: "byte store", close: () => bytes.close() },
    { name: "mail html sanitizer", close: () => mailHtml.close() },
  ]);
  return { ...service, app, server, url, events };
}

type AppParts = {
  boot: ProducerBoot;
  bytes: ByteStore;
  events: EventHub;
  queues: { outbound: Parameters<typeof outboundEnqueuer>[0] } & Parameters<typeof deliveryEnqueuer>[0];
  domainDns: DomainDns | undefined;
  mailHtml: MailSanitizer;
};

function apiApp(env: ApiEnv, { boot, bytes, events, queues, mailHtml, domainDns }: AppParts): Express {
  const { prisma, logger, obs } = boot;
  // DNS_SERVERS behind every SSRF check (create/update/test), as in the dispatcher at delivery.
  const egressResolver = createEgressResolver(env.DNS_SERVERS);
  return createApp({
    prisma,
    bytes,
    ...(env.SIGNED_URL_SECRET ? { signedUrlSecret: env.SIGNED_URL_SECRET } : {}),
    registry: obs.registry,
    mailHtml,
    draining: () => obs.health.draining,
    ready: () => obs.health.ready(),
    redis: boot.producerRedis,
    logger,
    bodyLimit: env.API_BODY_LIMIT,
    trustedProxies: trustedProxyEntries(env.API_TRUST_PROXY, env.API_TRUSTED_PROXIES),
    rateLimit: {
      limit: env.RATE_LIMIT_REQUESTS,
      windowSeconds: env.RATE_LIMIT_WINDOW_SECONDS,
      prefix: env.REDIS_PREFIX,
    },
    cursors: createCursorCodec(env.CURSOR_SECRET),
    checkDestination: createDestinationCheck({
      allowPrivate: env.ALLOW_PRIVATE_DESTINATIONS,
      resolver: egressResolver,
    }),
    egressResolver,
    domainDns: domainDns ?? createDomainDns({ servers: env.DNS_SERVERS }),
    enqueueOutbound: outboundEnqueuer(queues.outbound),
    enqueueDelivery: deliveryEnqueuer({ delivery: queues.delivery, forward: queues.forward }),
    events,
    config: {
      mxHost: env.MX_HOST,
      dkimDomain: env.DKIM_DOMAIN,
      publicApiUrl: env.PUBLIC_API_URL,
      allowPrivateDestinations: env.ALLOW_PRIVATE_DESTINATIONS,
      defaultRetentionDays: env.DEFAULT_RETENTION_DAYS,
    },
  });
}

/** Closes the HTTP server, ending idle keep-alive connections so close() does not wait on them. */
function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
