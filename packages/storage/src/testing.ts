import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import type { S3Settings } from "./config.ts";

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
