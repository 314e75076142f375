import { createPrisma, type PrismaClient, poolOf } from "@mailroom/db";
import { createTestEnv, type PgProxy, startPgProxy, type TestEnv, waitFor } from "@mailroom/testing";
import { Redis } from "ioredis";
import type { ServiceProcess } from "./service-processes.ts";

/**
 * What the Postgres-blip tests share: a test database, a direct Prisma client on it (seeding, and
 * checks that must work while the service's Postgres is cut), and a cuttable TCP proxy in front of
 * it for the service processes.
 */
export type Blip = { env: TestEnv; prisma: PrismaClient; proxy: PgProxy; close(): Promise<void> };

export async function blipEnv(): Promise<Blip> {
  const env = await createTestEnv();
  const prisma = createPrisma(env.databaseUrl, { max: 4 });
  const proxy = await startPgProxy(env.databaseUrl);
  return {
    env,
    prisma,
    proxy,
    async close() {
      await proxy.close();
      await prisma.$disconnect();
      await env.cleanup();
    },
  };
}

/** Throws (with what it printed) when the process has exited: the failure these tests look for. */
export function alive(p: ServiceProcess): true {
  if (p.child.exitCode !== null || p.child.signalCode !== null) {
    throw new Error(
      `${p.name} exited (${p.child.exitCode ?? p.child.signalCode}):\n${p.stderr().slice(-3000)}${p.stdout().slice(-3000)}`,
    );
  }
  return true;
}

/** Until `probe` holds, failing at once if the process exits meanwhile. */
export function whileAlive(p: ServiceProcess, probe: () => Promise<boolean>, what: string, timeoutMs = 60_000) {
  return waitFor(async () => alive(p) && (await probe()), { what, timeoutMs, intervalMs: 100 });
}

/** The process logged the first "postgres error" of an outage from `source` (dependency-errors.ts). */
export const loggedPostgresError = (p: ServiceProcess, source: string) =>
  p.logLines().some((l) => l.dependency === "postgres" && l.source === source);

/** A statement of another session waits for a lock (the state each test cuts Postgres in). */
export async function waitingForLock(prisma: PrismaClient, queryLike: string): Promise<boolean> {
  const r = await poolOf(prisma).query(
    `SELECT 1 FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND wait_event_type = 'Lock' AND query LIKE $1`,
    [queryLike],
  );
  return (r.rowCount ?? 0) > 0;
}

/** `promise`, or a failure with the process's output as soon as it exits (a reply that never comes). */
export function unlessExited<T>(p: ServiceProcess, promise: Promise<T>): Promise<T> {
  const exited = p.exited().then((): never => {
    alive(p);
    throw new Error(`${p.name} exited`);
  });
  exited.catch(() => undefined);
  return Promise.race([promise, exited]);
}

/** What BullMQ's event stream of the `inbound` queue says happened to one job, in order. */
export async function jobEvents(b: Blip, jobId: string): Promise<string[]> {
  const redis = new Redis(b.env.redisUrl, { maxRetriesPerRequest: 1 });
  try {
    const entries = await redis.xrange(`${b.env.redisPrefix}:inbound:events`, "-", "+");
    return entries.flatMap(([, fields]) => {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i] as string, fields[i + 1] as string);
      return f.get("jobId") === jobId ? [f.get("event") ?? ""] : [];
    });
  } finally {
    redis.disconnect();
  }
}
