import type { AddressInfo } from "node:net";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { createQueue, createRedis, type Redis, type TypedQueue } from "@mailroom/queues";
import { createIngestServer, type IngestOptions } from "@mailroom/smtp-ingest";
import { createTestEnv, HARNESS_POOL_WAIT_MS, type TestEnv } from "@mailroom/testing";

export type Ingest = {
  port: number;
  server: ReturnType<typeof createIngestServer>;
  close(): Promise<void>;
};

export type IngestEnv = {
  env: TestEnv;
  prisma: PrismaClient;
  redis: Redis;
  queue: TypedQueue<"inbound">;
  start(overrides?: Partial<IngestOptions>): Promise<Ingest>;
  close(): Promise<void>;
};

/** A fresh database and Redis prefix, and ingest servers on ephemeral ports wired as main.ts wires them. */
export async function ingestEnv(): Promise<IngestEnv> {
  const env = await createTestEnv();
  const prisma = createPrisma(env.databaseUrl, { max: 4, connectionTimeoutMillis: HARNESS_POOL_WAIT_MS });
  const redis = createRedis(env.redisUrl, "producer");
  const queue = createQueue("inbound", { connection: redis, prefix: env.redisPrefix });
  const started: Ingest[] = [];
  return {
    env,
    prisma,
    redis,
    queue,
    async start(overrides = {}) {
      const server = createIngestServer({
        prisma,
        queue,
        logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
        hostname: "mx.mailroom.test",
        maxMessageBytes: 1_000_000,
        maxRecipients: 5,
        socketTimeoutMs: 30_000,
        maxConnections: 50,
        maxConnectionsPerIp: 20,
        drainBudgetMs: 500,
        ...overrides,
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
      const port = (server.server.address() as AddressInfo).port;
      const ingest: Ingest = {
        port,
        server,
        close: () => server.drain(),
      };
      started.push(ingest);
      return ingest;
    },
    async close() {
      for (const s of started) await s.close().catch(() => undefined);
      await queue.close();
      redis.disconnect();
      await prisma.$disconnect();
      await env.cleanup();
    },
  };
}
