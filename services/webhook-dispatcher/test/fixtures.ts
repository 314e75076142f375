import { promises as dns } from "node:dns";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach } from "@jest/globals";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { createConnectionPool } from "@mailroom/egress";
import { createLogger } from "@mailroom/log";
import { createQueue, createRedis, type Redis, type TypedQueue } from "@mailroom/queues";
import {
  createTestEnv,
  HARNESS_POOL_WAIT_MS,
  type Receiver,
  type Reply,
  type Seeded,
  seedDomain,
  startReceiver,
  type TestEnv,
} from "@mailroom/testing";
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
  const prisma = createPrisma(env.databaseUrl, { max: 5, connectionTimeoutMillis: HARNESS_POOL_WAIT_MS });
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

/** What a dispatcher test file works with; filled in by the `beforeAll` of useDispatchTest. */
export type DispatchTest = { h: Harness; receiver: Receiver; s: Seeded };

/**
 * The setup most dispatcher test files share: a harness, one receiver, the domain acme.example in
 * a fresh account. `start` runs once after that (to start a dispatcher for the whole file); with
 * `reply`, the receiver forgets its requests and answers `reply` again before each test. Registers
 * its own hooks; read the fields of the returned object inside tests only.
 */
export function useDispatchTest(opts: { start?: (h: Harness) => void; reply?: Reply } = {}): DispatchTest {
  const t = {} as DispatchTest;
  beforeAll(async () => {
    [t.h, t.receiver] = await Promise.all([startHarness(), startReceiver()]);
    t.s = await seedDomain(t.h.prisma, "acme.example");
    opts.start?.(t.h);
  });
  afterAll(async () => {
    await t.h?.close();
    await t.receiver?.close();
  });
  const { reply } = opts;
  if (reply)
    beforeEach(() => {
      t.receiver.requests.length = 0;
      t.receiver.respond(() => ({ ...reply }));
    });
  return t;
}

/**
 * A dispatcher on Redis connections of the test's own (a throwaway Redis the test restarts) and
 * the harness's Postgres, with no keep-alive pool and no sweep grace; `opts` set the rest.
 */
export function startDispatcherOn(
  h: Harness,
  redis: { queue: TypedQueue<"delivery">; worker: Redis; producer: Redis; prefix: string },
  opts: Pick<DispatcherOptions, "concurrency" | "sweepIntervalMs">,
): Dispatcher {
  return startDispatcher({
    prisma: h.prisma,
    queue: redis.queue,
    logger,
    send: createSender({ allowPrivate: true, resolver: h.resolver }),
    publicApiUrl: "http://127.0.0.1:0",
    backoffUnitMs: 1_000,
    connection: redis.worker,
    slotsRedis: redis.producer,
    prefix: redis.prefix,
    sweepGraceMs: 0,
    ...opts,
  });
}

/** `n` small text attachments (file-0.txt, file-1.txt, …), stored in their rows, for seedDelivery. */
export const files = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    filename: `file-${i}.txt`,
    contentType: "text/plain",
    content: Buffer.from("abc"),
  }));

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
