import { promises as dns } from "node:dns";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createPrisma, newId, type PrismaClient } from "@mailroom/db";
import { createConnectionPool } from "@mailroom/egress";
import { createLogger } from "@mailroom/log";
import { createQueue, createRedis, type Redis, type TypedQueue } from "@mailroom/queues";
import { createTestEnv, type TestEnv } from "@mailroom/testing";
import { createSender } from "../src/send.ts";
import { type Dispatcher, type DispatcherOptions, startDispatcher } from "../src/worker.ts";

export const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

/** A database, Redis connections and the delivery queue for one test file. */
export type Harness = {
  env: TestEnv;
  prisma: PrismaClient;
  worker: Redis;
  producer: Redis;
  queue: TypedQueue<"delivery">;
  resolver: dns.Resolver;
  /** Starts a dispatcher wired like main.ts (real sender through the SSRF guard). */
  dispatcher(opts?: Partial<DispatcherOptions> & { allowPrivate?: boolean }): Dispatcher;
  close(): Promise<void>;
};

export async function startHarness(): Promise<Harness> {
  const env = await createTestEnv();
  const prisma = createPrisma(env.databaseUrl, { max: 5 });
  const worker = createRedis(env.redisUrl, "worker");
  const producer = createRedis(env.redisUrl, "worker");
  const queue = createQueue("delivery", { connection: producer, prefix: env.redisPrefix });
  const resolver = new dns.Resolver({ timeout: 2_000, tries: 1 });
  const running = new Set<Dispatcher>();
  const pool = createConnectionPool(); // as main.ts: keep-alive per endpoint and checked address
  return {
    env,
    prisma,
    worker,
    producer,
    queue,
    resolver,
    dispatcher({ allowPrivate = true, ...opts } = {}) {
      const d = startDispatcher({
        prisma,
        queue,
        logger,
        send: createSender({ allowPrivate, resolver, pool }),
        publicApiUrl: "http://127.0.0.1:0",
        backoffUnitMs: 20,
        connection: worker,
        slotsRedis: producer,
        prefix: env.redisPrefix,
        concurrency: 4,
        sweepIntervalMs: 3_600_000,
        ...opts,
      });
      running.add(d);
      const close = d.close;
      d.close = async () => {
        running.delete(d);
        await close();
      };
      return d;
    },
    async close() {
      for (const d of [...running]) await d.close();
      pool.close();
      await queue.close();
      worker.disconnect();
      producer.disconnect();
      await prisma.$disconnect();
      await env.cleanup();
    },
  };
}

export type Seeded = { accountId: string; domainId: string };

export async function seedAccount(prisma: PrismaClient): Promise<Seeded> {
  const accountId = newId("account");
  await prisma.account.create({ data: { id: accountId, name: "test" } });
  const domainId = newId("domain");
  await prisma.domain.create({
    data: {
      id: domainId,
      accountId,
      domain: `${domainId.toLowerCase().replace(/_/g, "-")}.example`,
      status: "verified",
      dkimTokens: [],
      dnsRecords: [],
    },
  });
  return { accountId, domainId };
}

export type EndpointInput = {
  url: string;
  type?: "webhook" | "slack" | "discord";
  timeoutSeconds?: number;
  maxAttempts?: number;
  headers?: Record<string, string>;
  active?: boolean;
  secret?: string;
  previousSecret?: string | null;
  previousSecretExpiresAt?: Date | null;
};

export async function seedEndpoint(prisma: PrismaClient, s: Seeded, input: EndpointInput) {
  return prisma.endpoint.create({
    data: {
      id: newId("endpoint"),
      accountId: s.accountId,
      name: "test",
      type: input.type ?? "webhook",
      url: input.url,
      headers: input.headers ?? {},
      timeoutSeconds: input.timeoutSeconds ?? 5,
      maxAttempts: input.maxAttempts ?? 5,
      active: input.active ?? true,
      secret: input.secret ?? `whsec_${newId("endpoint")}`,
      previousSecret: input.previousSecret ?? null,
      previousSecretExpiresAt: input.previousSecretExpiresAt ?? null,
    },
  });
}

export type EmailInput = { subject?: string; textBody?: string; fromAddress?: string; attachments?: number };

/** An email as the rule engine stores it, and its pending Delivery to `endpointId` (not queued). */
export async function seedDelivery(
  prisma: PrismaClient,
  s: Seeded,
  endpoint: { id: string; maxAttempts: number },
  email: EmailInput = {},
) {
  const threadId = newId("thread");
  const emailId = newId("email");
  const now = new Date();
  await prisma.thread.create({ data: { id: threadId, accountId: s.accountId, subject: "t", lastMessageAt: now } });
  await prisma.email.create({
    data: {
      id: emailId,
      accountId: s.accountId,
      domainId: s.domainId,
      threadId,
      direction: "inbound",
      messageId: `<${emailId}@sender.example>`,
      fromAddress: email.fromAddress ?? "alice@sender.example",
      toAddresses: ["support@acme.example"],
      ccAddresses: [],
      replyTo: [],
      references: [],
      subject: email.subject ?? "Hello",
      textBody: email.textBody ?? "Hi there.\n",
      htmlBody: "",
      recipient: "support@acme.example",
      spamVerdict: "PASS",
      spfVerdict: "PASS",
      dkimVerdict: "PASS",
      dmarcVerdict: "PASS",
      contentHash: emailId,
      receivedAt: now,
    },
  });
  for (let i = 0; i < (email.attachments ?? 0); i++) {
    await prisma.attachment.create({
      data: {
        id: newId("attachment"),
        emailId,
        index: i,
        filename: `file-${i}.txt`,
        contentType: "text/plain",
        size: 3,
        checksum: "x",
        content: new Uint8Array([97, 98, 99]),
        stored: true,
      },
    });
  }
  return prisma.delivery.create({
    data: {
      id: newId("delivery"),
      accountId: s.accountId,
      emailId,
      endpointId: endpoint.id,
      maxAttempts: endpoint.maxAttempts,
      nextAttemptAt: now,
    },
  });
}

/** What the rule engine does after storing: queue attempt 1. */
export const queueFirstAttempt = (queue: TypedQueue<"delivery">, deliveryId: string) =>
  queue.add("delivery", { deliveryId }, { jobId: `${deliveryId}.1` });

/**
 * An HTTP server that holds every request until the test releases it, and reports how many it
 * holds at most at once: for the per-endpoint concurrency test, without timing assumptions.
 */
export type HoldingServer = {
  url: string;
  held: number;
  maxHeld: number;
  received: number;
  releaseAll(): void;
  close(): Promise<void>;
};

export async function startHoldingServer(): Promise<HoldingServer> {
  const waiting: http.ServerResponse[] = [];
  let releasing = false;
  const state = { held: 0, maxHeld: 0, received: 0 };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      state.received++;
      if (releasing) return void res.end("ok");
      state.held++;
      state.maxHeld = Math.max(state.maxHeld, state.held);
      waiting.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get held() {
      return state.held;
    },
    get maxHeld() {
      return state.maxHeld;
    },
    get received() {
      return state.received;
    },
    releaseAll() {
      releasing = true;
      for (const res of waiting.splice(0)) {
        state.held--;
        res.end("ok");
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on which nothing listens (bound, then released). */
export async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
