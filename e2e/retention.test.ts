import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { fixtures } from "@mailroom/retention/testing";
import { createTestEnv, type TestEnv, waitFor } from "@mailroom/testing";
import { type ServiceProcess, startService, stopService, waitReady } from "./service-processes.ts";

/**
 * The retention pass as deployed: the domain-verifier process runs it on its schedule. Rows are
 * dated relative to the real clock (the pass's own clock is injected only in the package tests).
 */
let env: TestEnv;
let prisma: PrismaClient;
let verifier: ServiceProcess | undefined;

beforeAll(async () => {
  env = await createTestEnv();
  prisma = createPrisma(env.databaseUrl);
});

afterAll(async () => {
  if (verifier) await stopService(verifier);
  await prisma?.$disconnect();
  await env?.cleanup();
});

it("the domain-verifier deletes mail past an account's retention and counts it in /metrics", async () => {
  const f = fixtures(prisma, new Date());
  const a = await f.account(30);
  const forever = await f.account(null);
  const expired = await f.email({ account: a, days: 31, attachment: Buffer.from("old"), delivery: "dead" });
  const recent = await f.email({ account: a, days: 29 });
  const kept = await f.email({ account: forever, days: 400 });
  const block = await f.block(a.id, 31);

  verifier = await startService("domain-verifier", {
    DATABASE_URL: env.databaseUrl,
    RETENTION_INTERVAL_MS: "200",
    RETENTION_BATCH_SIZE: "10",
  });
  await waitReady(verifier);
  await waitFor(async () => (await prisma.blockRecord.count({ where: { id: block } })) === 0, {
    timeoutMs: 60_000,
    what: "the retention pass to delete the expired block record",
  });
  const left = await prisma.email.findMany({ where: { id: { in: [expired.id, recent.id, kept.id] } } });
  expect(left.map((e) => e.id).sort()).toEqual([recent.id, kept.id].sort());
  expect(await prisma.attachment.count({ where: { emailId: expired.id } })).toBe(0);
  expect(await prisma.delivery.count({ where: { emailId: expired.id } })).toBe(0);
  const metrics = await verifier.metrics();
  expect(metrics).toMatch(/mailroom_retention_deleted_total\{[^}]*table="emails"[^}]*\} 1\b/);
  expect(metrics).toMatch(/mailroom_retention_deleted_total\{[^}]*table="block_records"[^}]*\} 1\b/);
});
