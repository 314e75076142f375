import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPrisma, type PrismaClient, poolOf } from "@mailroom/db";
import { createTestEnv, type TestEnv } from "@mailroom/testing";
import S3rver from "s3rver";
import type { S3Settings } from "./config.ts";
import { createByteStore } from "./index.ts";
import type { ByteStore } from "./store.ts";

export type LocalS3 = { settings: S3Settings; endpoint: string; close(): Promise<void> };

/**
 * A real S3-compatible server (s3rver, over HTTP on a free loopback port, objects in a temporary
 * directory) with one bucket, for tests. s3rver's fixed credentials are S3RVER / S3RVER.
 */
export async function startLocalS3(bucket = "mailroom-test"): Promise<LocalS3> {
  const directory = await mkdtemp(join(tmpdir(), "mailroom-s3-"));
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    directory,
    silent: true,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  // Idle keep-alive connections are left for the client to close. With Node's 5 s default the
  // server may close one just as a client sends its next request on it (fetch then fails with
  // ECONNRESET: seen under load, where the gap between two requests of a test reaches 5 s).
  // Clients follow the Keep-Alive timeout the server announces, so they now close first.
  if (server.httpServer) server.httpServer.keepAliveTimeout = 120_000;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    settings: {
      endpoint,
      region: "us-east-1",
      bucket,
      accessKeyId: "S3RVER",
      secretAccessKey: "S3RVER",
      forcePathStyle: true,
    },
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** A test database, a local S3 and a byte store over both (BYTE_STORE=s3): the object-store tests' setup. */
export type S3Fixture = { env: TestEnv; prisma: PrismaClient; s3: LocalS3; store: ByteStore; close(): Promise<void> };

/** Call it in `beforeAll` (give it a long timeout: s3rver starts in a few seconds), `close` in `afterAll`. */
export async function startS3Fixture(): Promise<S3Fixture> {
  const env = await createTestEnv();
  const prisma = createPrisma(env.databaseUrl);
  const s3 = await startLocalS3();
  const store = createByteStore({ backend: "s3", s3: s3.settings }, poolOf(prisma));
  return {
    env,
    prisma,
    s3,
    store,
    async close() {
      store.close();
      await s3.close();
      await prisma.$disconnect();
      await env.cleanup();
    },
  };
}
