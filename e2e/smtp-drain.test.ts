import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import {
  createTestEnv,
  rawSession,
  seedAddress,
  seedDomain,
  sparePort,
  type TestEnv,
  waitFor,
} from "@mailroom/testing";
import { type ServiceProcess, startService, stopService, waitReady } from "./service-processes.ts";

type Raw = Awaited<ReturnType<typeof rawSession>>;
const finalReply = (s: Raw, from: number) =>
  waitFor(async () => s.lines.slice(from).find((l) => /^\d{3} /.test(l)) ?? false, {
    what: "a reply",
    timeoutMs: 90_000,
  });
async function command(s: Raw, line: string): Promise<string> {
  const n = s.lines.length;
  s.write(line);
  return finalReply(s, n);
}

/**
 * SIGTERM drains smtp-ingest, it does not cut it: an upload in progress finishes and gets its 250
 * however long past the old fixed 5 s close timeout it runs (within SHUTDOWN_TIMEOUT_MS), idle
 * sessions get `421 4.3.2` at once, new connections are refused, and the process exits 0.
 */
describe("smtp-ingest on SIGTERM", () => {
  let env: TestEnv;
  let prisma: PrismaClient;
  let ingest: ServiceProcess | undefined;
  beforeAll(async () => {
    env = await createTestEnv();
    prisma = createPrisma(env.databaseUrl, { max: 2 });
    await seedAddress(prisma, await seedDomain(prisma, "drain.example"), "in");
  });
  afterAll(async () => {
    if (ingest) await stopService(ingest);
    await prisma?.$disconnect();
    await env?.cleanup();
  });

  it("lets a DATA in progress finish with its 250, then 421 4.3.2, and exits 0", async () => {
    const port = await sparePort();
    ingest = await startService("smtp-ingest", {
      LOG_LEVEL: "info",
      DATABASE_URL: env.databaseUrl,
      REDIS_URL: env.redisUrl,
      REDIS_PREFIX: env.redisPrefix,
      SMTP_HOST: "127.0.0.1",
      SMTP_PORT: String(port),
      SHUTDOWN_TIMEOUT_MS: "120000",
    });
    await waitReady(ingest);
    const idle = await rawSession(port);
    await idle.next(/^220 /);
    await command(idle, "EHLO idle.example");
    const upload = await rawSession(port);
    await upload.next(/^220 /);
    await command(upload, "EHLO upload.example");
    expect(await command(upload, "MAIL FROM:<a@sender.example>")).toMatch(/^250 /);
    expect(await command(upload, "RCPT TO:<in@drain.example>")).toMatch(/^250 /);
    expect(await command(upload, "DATA")).toMatch(/^354 /);
    upload.socket.write("From: a@sender.example\r\nTo: in@drain.example\r\nSubject: slow upload\r\n\r\nfirst part\r\n");

    // Whatever comes next on the upload (its 250, or the 421 of a cut).
    const n = upload.lines.length;
    const exited = ingest.exited();
    ingest.child.kill("SIGTERM");
    const signalled = Date.now();
    const p = ingest;
    await waitFor(async () => p.logLines().some((l) => l.msg === "shutting down"), {
      what: "the shutdown to start",
      timeoutMs: 90_000,
    });
    // A slow sender: the upload goes on past the 5 s at which smtp-server's close cut every session.
    await delay(Math.max(0, 6_000 - (Date.now() - signalled)));
    upload.socket.write("last part\r\n.\r\n");
    const accepted = await finalReply(upload, n);
    expect(accepted).toMatch(/^250 2\.0\.0 Ok: queued as spl_/);
    expect(await upload.next(/^421 /)).toMatch(/^421 4\.3\.2 /);
    // The idle session was told at once; nothing new is taken.
    expect(idle.lines.find((l) => l.startsWith("421"))).toMatch(/^421 4\.3\.2 /);
    await expect(rawSession(port)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    expect(await exited).toBe(0);
    const spoolId = /queued as (\S+)/.exec(accepted)?.[1] ?? "";
    expect(await prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(1);
  }, 300_000);
});
