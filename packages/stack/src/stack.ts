import { runCommand } from "@mailroom/admin";
import { type ApiService, loadApiEnv, type RateLimitConfig, startApiService } from "@mailroom/api";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { createDomainDns, type DomainDns } from "@mailroom/domain-verification";
import { loadVerifierEnv, startVerifierService } from "@mailroom/domain-verifier";
import { createLogger } from "@mailroom/log";
import { startObservability, type WorkerBoot } from "@mailroom/observability";
import { loadSenderEnv, startSenderService } from "@mailroom/outbound-sender";
import { createRedisConnections, type TypedQueue } from "@mailroom/queues";
import { type DnsResolve, loadRuleEngineEnv, startRuleEngineService } from "@mailroom/rule-engine";
import { loadIngestEnv, type RouteCache, startIngestService } from "@mailroom/smtp-ingest";
import type { S3Settings } from "@mailroom/storage";
import { createTestEnv, HARNESS_POOL_WAIT_MS, type TestEnv } from "@mailroom/testing";
import { loadDispatcherEnv, startDispatcherService } from "@mailroom/webhook-dispatcher";

export type Stack = {
  env: TestEnv;
  prisma: PrismaClient;
  apiUrl: string;
  /** The API's express app (for walking its routes). */
  app: ApiService["app"];
  smtpPort: number;
  /** The ingest's RCPT route cache, when `ingestEnv` turned it on. */
  rcptRoutes?: RouteCache;
  inboundQueue: TypedQueue<"inbound">;
  deliveryQueue: TypedQueue<"delivery">;
  /** Queue `forward`: deliveries to email destinations; a test starts the outbound sender on it. */
  forwardQueue: TypedQueue<"forward">;
  /** Queue `outbound`: the API enqueues sends here; a test starts the outbound sender on it. */
  outboundQueue: TypedQueue<"outbound">;
  /** The API's live-event hub (wait_for_email, GET /events). */
  events: ApiService["events"];
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
  /** API rate limit; default: 100 000 requests per minute (never reached by a test). */
  rateLimit?: Partial<Pick<RateLimitConfig, "limit" | "windowSeconds">>;
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
  /** The rule engine's virus and ARC settings (CLAMD_URL, CLAMD_TIMEOUT_MS, ARC_TRUSTED_SEALERS); default: none. */
  verdicts?: { clamdUrl?: string; clamdTimeoutMs?: number; arcTrustedSealers?: string };
  /** Start the outbound sender too (queues `outbound` and `forward`), relaying to this SMTP server. */
  outbound?: { relayUrl: string; maxAttempts?: number; backoffUnitMs?: number };
  /** More API settings, as a deployment sets them (e.g. API_TRUSTED_PROXIES). */
  apiEnv?: Record<string, string>;
  /**
   * More ingest settings. The RCPT route cache is off unless set here (SMTP_RCPT_CACHE_TTL_MS): a
   * test that changes an address and sends at once would race the change's notification.
   */
  ingestEnv?: Record<string, string>;
};

/** What the API puts in links (it listens on an ephemeral port, so not its own URL). */
const PUBLIC_API_URL = "http://127.0.0.1:0";

const noDns: DnsResolve = async () => {
  throw Object.assign(new Error("no DNS in tests"), { code: "ENOTFOUND" });
};

/** What every service of one stack shares: the database, the two Redis connections, the queues tests use. */
type Shared = ReturnType<typeof openShared>;
type Closer = () => Promise<unknown>;

/**
 * Every service of mailroom in this process, started by the same functions their main.ts files
 * call (services/X/src/service.ts), with their env given as strings and parsed by the services' own
 * env schemas, on a fresh database and Redis prefix, listening on ephemeral ports. The services
 * share one Prisma client and one pair of Redis connections (each its own health port and metrics).
 */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const env = await createTestEnv();
  const shared = openShared(env);
  const closers: Closer[] = [];
  const services = { ingest: true, ruleEngine: true, dispatcher: true, domainVerifier: false, ...opts.services };
  try {
    const api = await startApi(shared, opts, closers);
    const ingest = services.ingest ? await startIngest(shared, opts, closers) : undefined;
    if (services.ruleEngine) await startEngine(shared, opts, closers);
    if (services.dispatcher) await startDispatch(shared, opts, api.url, closers);
    if (services.domainVerifier) await startDomainVerifier(shared, opts, closers);
    if (opts.outbound) await startSender(shared, opts, opts.outbound, closers);
    const admin = adminOf(shared.prisma);
    return {
      ...shared.queues,
      env,
      prisma: shared.prisma,
      apiUrl: api.url,
      app: api.app,
      smtpPort: ingest?.port ?? 0,
      ...(ingest?.routes ? { rcptRoutes: ingest.routes } : {}),
      events: api.events,
      admin,
      account: (o) => newAccount(admin, api.url, o),
      close: () => closeStack(shared, closers),
    };
  } catch (err) {
    await closeStack(shared, closers);
    throw err;
  }
}

function openShared(env: TestEnv) {
  const logLevel = process.env.TEST_LOG_LEVEL ?? "silent";
  const logger = createLogger("test", logLevel);
  const prisma = createPrisma(env.databaseUrl, { max: 5, connectionTimeoutMillis: HARNESS_POOL_WAIT_MS });
  const redisConnections = createRedisConnections({ url: env.redisUrl, prefix: env.redisPrefix, logger });
  const producerRedis = redisConnections.connect("producer");
  const workerRedis = redisConnections.connect("worker");
  const queue = <K extends "inbound" | "delivery" | "forward" | "outbound">(key: K) =>
    redisConnections.queue(key, producerRedis);
  const queues = {
    inboundQueue: queue("inbound"),
    deliveryQueue: queue("delivery"),
    forwardQueue: queue("forward"),
    outboundQueue: queue("outbound"),
  };
  return { env, logLevel, prisma, redisConnections, producerRedis, workerRedis, queues };
}

/** One service's boot: the shared database and Redis, its own logger and health port (closed by the stack). */
async function bootOf(name: string, shared: Shared, closers: Closer[]): Promise<WorkerBoot> {
  const logger = createLogger(name, shared.logLevel);
  const obs = await startObservability(name, logger, { HEALTH_PORT: 0, HEALTH_HOST: "127.0.0.1" });
  closers.push(() => obs.close());
  const { prisma, redisConnections, producerRedis, workerRedis } = shared;
  return { logger, prisma, obs, redisConnections, producerRedis, workerRedis };
}

/** The env every service reads, as strings (what a deployment sets). */
function commonEnv(shared: Shared, opts: StackOptions): Record<string, string> {
  const s3 = opts.s3?.settings;
  return {
    DATABASE_URL: shared.env.databaseUrl,
    REDIS_URL: shared.env.redisUrl,
    REDIS_PREFIX: shared.env.redisPrefix,
    LOG_LEVEL: shared.logLevel,
    ALLOW_PRIVATE_DESTINATIONS: String(opts.allowPrivateDestinations ?? true),
    ...(opts.egressDnsServers ? { DNS_SERVERS: opts.egressDnsServers.join(",") } : {}),
    ...(opts.signedUrlSecret ? { SIGNED_URL_SECRET: opts.signedUrlSecret } : {}),
    SIGNED_URL_TTL_SECONDS: String(opts.s3?.signedUrlTtlSeconds ?? 3600),
    ...(s3
      ? {
          BYTE_STORE: "s3",
          ...(s3.endpoint ? { S3_ENDPOINT: s3.endpoint } : {}),
          S3_REGION: s3.region,
          S3_BUCKET: s3.bucket,
          S3_ACCESS_KEY_ID: s3.accessKeyId,
          S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
          S3_FORCE_PATH_STYLE: String(s3.forcePathStyle),
        }
      : {}),
  };
}

async function startApi(shared: Shared, opts: StackOptions, closers: Closer[]) {
  const env = loadApiEnv({
    ...commonEnv(shared, opts),
    API_PORT: "0",
    API_HOST: "127.0.0.1",
    MX_HOST: "mx.mailroom.test",
    DKIM_DOMAIN: "mailroom.test",
    PUBLIC_API_URL,
    CURSOR_SECRET: "test-cursor-secret",
    RATE_LIMIT_REQUESTS: String(opts.rateLimit?.limit ?? 100_000),
    RATE_LIMIT_WINDOW_SECONDS: String(opts.rateLimit?.windowSeconds ?? 60),
    ...opts.apiEnv,
  });
  const api = await startApiService(env, {
    boot: await bootOf("api", shared, closers),
    // The system's resolver unless a test gives its DNS (egressDnsServers are for the SSRF guard only).
    domainDns: opts.domainDns ?? createDomainDns({}),
    ...(opts.eventsHeartbeatMs ? { eventsHeartbeatMs: opts.eventsHeartbeatMs } : {}),
  });
  closers.push(async () => {
    // Open event streams end first; then no request a test left open holds the server.
    await api.events.close();
    api.server.closeAllConnections();
    await api.close();
  });
  return api;
}

async function startIngest(shared: Shared, opts: StackOptions, closers: Closer[]) {
  const env = loadIngestEnv({
    ...commonEnv(shared, opts),
    SMTP_PORT: "0",
    SMTP_HOST: "127.0.0.1",
    SMTP_HOSTNAME: "mx.mailroom.test",
    MAX_MESSAGE_BYTES: String(opts.maxMessageBytes ?? 26_214_400),
    SMTP_SOCKET_TIMEOUT_MS: "30000",
    SMTP_MAX_CONNECTIONS: "100",
    SMTP_MAX_CONNECTIONS_PER_IP: "50",
    SMTP_RCPT_CACHE_TTL_MS: "0",
    ...opts.ingestEnv,
  });
  const ingest = await startIngestService(env, {
    boot: await bootOf("smtp-ingest", shared, closers),
    server: { drainBudgetMs: 500 },
  });
  closers.push(() => ingest.close());
  return ingest;
}

async function startEngine(shared: Shared, opts: StackOptions, closers: Closer[]) {
  const env = loadRuleEngineEnv({
    ...commonEnv(shared, opts),
    RULE_ENGINE_CONCURRENCY: "2",
    SWEEP_INTERVAL_MS: "3600000",
    SMTP_HOSTNAME: "mx.mailroom.test",
    ...(opts.verdicts?.clamdUrl ? { CLAMD_URL: opts.verdicts.clamdUrl } : {}),
    ...(opts.verdicts?.clamdTimeoutMs ? { CLAMD_TIMEOUT_MS: String(opts.verdicts.clamdTimeoutMs) } : {}),
    ...(opts.verdicts?.arcTrustedSealers ? { ARC_TRUSTED_SEALERS: opts.verdicts.arcTrustedSealers } : {}),
  });
  const engine = await startRuleEngineService(env, {
    boot: await bootOf("rule-engine", shared, closers),
    resolver: opts.authResolver ?? noDns,
  });
  closers.push(() => engine.close());
}

async function startDispatch(shared: Shared, opts: StackOptions, apiUrl: string, closers: Closer[]) {
  const env = loadDispatcherEnv({
    ...commonEnv(shared, opts),
    // The API's PUBLIC_API_URL (the API learns its port only once listening), except for the links the
    // API serves without a key (SIGNED_URL_SECRET): those must reach this stack's API.
    PUBLIC_API_URL: opts.signedUrlSecret ? apiUrl : PUBLIC_API_URL,
    BACKOFF_UNIT_MS: String(opts.backoffUnitMs ?? 60_000),
    DISPATCHER_CONCURRENCY: String(opts.dispatcher?.concurrency ?? 4),
    DISPATCHER_ENDPOINT_CONCURRENCY: String(opts.dispatcher?.endpointConcurrency ?? 4),
    SWEEP_INTERVAL_MS: String(opts.dispatcher?.sweepIntervalMs ?? 30_000),
    SWEEP_GRACE_MS: String(opts.dispatcher?.sweepGraceMs ?? 30_000),
  });
  const dispatcher = await startDispatcherService(env, { boot: await bootOf("webhook-dispatcher", shared, closers) });
  closers.push(() => dispatcher.close());
}

async function startDomainVerifier(shared: Shared, opts: StackOptions, closers: Closer[]) {
  if (!opts.domainDns) throw new Error("startStack: services.domainVerifier needs domainDns (a loopback DNS server)");
  const env = loadVerifierEnv({
    ...commonEnv(shared, opts),
    VERIFY_POLL_INTERVAL_MS: String(opts.verifier?.pollIntervalMs ?? 100),
    VERIFY_BATCH_SIZE: "20",
    VERIFY_CONCURRENCY: "4",
    VERIFY_LEASE_MS: "60000",
    // The retention pass is tested on its own (packages/retention, e2e/retention*.test.ts).
    RETENTION_INTERVAL_MS: "0",
  });
  const verifier = await startVerifierService(env, {
    boot: await bootOf("domain-verifier", shared, closers),
    dns: opts.domainDns,
    ...(opts.verifier?.now ? { now: opts.verifier.now } : {}),
  });
  closers.push(() => verifier.close());
}

async function startSender(
  shared: Shared,
  opts: StackOptions,
  outbound: NonNullable<StackOptions["outbound"]>,
  closers: Closer[],
) {
  const env = loadSenderEnv({
    ...commonEnv(shared, opts),
    SMTP_RELAY_URL: outbound.relayUrl,
    SMTP_RELAY_TIMEOUT_MS: "5000",
    OUTBOUND_MAX_ATTEMPTS: String(outbound.maxAttempts ?? 3),
    BACKOFF_UNIT_MS: String(outbound.backoffUnitMs ?? 20),
    OUTBOUND_CONCURRENCY: "2",
    SWEEP_INTERVAL_MS: "3600000",
  });
  const sender = await startSenderService(env, { boot: await bootOf("outbound-sender", shared, closers) });
  closers.push(() => sender.close());
}

/** Admin CLI commands, run in-process against the stack's database. */
function adminOf(prisma: PrismaClient): Stack["admin"] {
  return async (...argv: string[]) => {
    const r = await runCommand(prisma, argv);
    if (!r.ok) throw new Error(`admin ${argv.join(" ")}: ${r.error}`);
    return r.value;
  };
}

async function newAccount(
  admin: Stack["admin"],
  apiUrl: string,
  { plan = "free", scope = "full" }: { plan?: "free" | "scale"; scope?: "read" | "full" } = {},
): Promise<TestAccount> {
  const acc = await admin("accounts", "create", "--name", "test", "--plan", plan);
  const key = String((await admin("keys", "create", "--account", String(acc.id), "--scope", scope)).key);
  return { accountId: String(acc.id), key, api: (method, path, body) => callApi(apiUrl, key, method, path, body) };
}

/** One JSON API call to `apiUrl` with the key; the body parsed as JSON when it is JSON. */
export async function callApi(apiUrl: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await readBody(res), headers: res.headers };
}

/** A response body parsed as JSON when it is JSON, else its text (null when empty). */
export async function readBody(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text; // not JSON: keep the text
  }
}

/** Services in the reverse order of their start, then the shared queues, Redis, Prisma and the test env. */
async function closeStack(shared: Shared, closers: Closer[]): Promise<void> {
  for (const c of closers.reverse()) await c().catch(() => undefined);
  await Promise.all(Object.values(shared.queues).map((q) => q.close()));
  shared.producerRedis.disconnect();
  shared.workerRedis.disconnect();
  await shared.prisma.$disconnect();
  await shared.env.cleanup();
}
