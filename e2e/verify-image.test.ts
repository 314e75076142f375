// scripts/verify-image.sh --quick: the production build started as the image starts it (start-all
// as an unprivileged user, every port ephemeral) passes the image's HEALTHCHECK; and whatever it
// made (scratch dir, scratch database, Redis keys, processes) is gone when it exits.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { expect, test } from "@jest/globals";
import { connectClient } from "@mailroom/db";
import { DEFAULT_TEST_DATABASE_URL, withDatabase } from "@mailroom/testing";
import { Redis } from "ioredis";
import { repoRoot } from "./services.ts";

test("verify-image --quick starts every service from the build, passes the HEALTHCHECK, and leaves nothing behind", async () => {
  const child = spawn("bash", ["scripts/verify-image.sh", "--quick"], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/root",
      REDIS_URL: process.env.MAILROOM_TEST_REDIS ?? "",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((r) => child.once("close", r));
  expect([code, out]).toEqual([0, expect.stringContaining("HEALTHCHECK passed")]);

  const made = /scratch dir (\S+), database (\S+), Redis prefix (\S+)/.exec(out);
  expect(made).not.toBeNull();
  const [, dir, database, prefix] = made as unknown as [string, string, string, string];
  expect(existsSync(dir)).toBe(false);
  // The script's scratch database lives on the local server (its default), like the tests' own.
  const pg = await connectClient(withDatabase(process.env.MAILROOM_TEST_PG ?? DEFAULT_TEST_DATABASE_URL, "postgres"));
  try {
    expect((await pg.query("SELECT 1 FROM pg_database WHERE datname = $1", [database])).rowCount).toBe(0);
  } finally {
    await pg.end();
  }
  const redis = new Redis(process.env.MAILROOM_TEST_REDIS ?? "redis://127.0.0.1:6379");
  try {
    expect(await redis.keys(`${prefix}:*`)).toEqual([]);
  } finally {
    redis.disconnect();
  }
}, 600_000);
