// Memory benchmark for big mail. Runs smtp-ingest and the rule engine as real processes (their
// main.ts) on a throwaway database, then:
//   1. one message with a 25 MB attachment (≈ 34 MB on the wire) through ingest → rule engine → stored;
//   2. one 200 MB message against a 1 MB limit (a second ingest), to show the overflow is not buffered.
// Prints each process's peak RSS (VmHWM from /proc/<pid>/status) before and after.
// Run: `npm run -s bench:large-message` (or `node --import tsx bench/large-message.ts [attachmentMB] [overflowMB]`).
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Readable } from "node:stream";
import { createPrisma } from "@mailroom/db";
import {
  connect,
  createTestEnv,
  mimeWithAttachment,
  seedAddress,
  seedDomain,
  send,
  sparePort,
  waitFor,
} from "@mailroom/testing";
import globalSetup from "@mailroom/testing/global-setup";
import globalTeardown from "@mailroom/testing/global-teardown";

const attachmentMB = Number(process.argv[2] ?? 25);
const overflowMB = Number(process.argv[3] ?? 200);
const root = resolve(import.meta.dirname, "..");
const MB = 1024 * 1024;

/** Peak and current resident set of a process, in MB. */
function memory(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { peak: kb("VmHWM") / 1024, now: kb("VmRSS") / 1024 };
}
const fmt = (m: { peak: number; now: number }) => `peak ${m.peak.toFixed(0)} MB (now ${m.now.toFixed(0)} MB)`;

await globalSetup();
const env = await createTestEnv();
const prisma = createPrisma(env.databaseUrl, { max: 2 });
const children: ChildProcess[] = [];
const start = (service: string, extra: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", `services/${service}/src/main.ts`], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: env.databaseUrl,
      REDIS_URL: env.redisUrl,
      REDIS_PREFIX: env.redisPrefix,
      LOG_LEVEL: "warn",
      ...extra,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.push(child);
  return child;
};
const listening = (port: number) =>
  waitFor(
    async () =>
      connect({ port })
        .then((c) => {
          c.quit();
          return true;
        })
        .catch(() => false),
    {
      what: `SMTP on ${port}`,
      timeoutMs: 30_000,
    },
  );

try {
  const d = await seedDomain(prisma, "bench-large.example");
  await seedAddress(prisma, d, "in");
  const [bigPort, smallPort] = [await sparePort(), await sparePort()];
  const ingest = start("smtp-ingest", {
    SMTP_PORT: String(bigPort),
    SMTP_HOST: "127.0.0.1",
    MAX_MESSAGE_BYTES: "40000000",
  });
  const strict = start("smtp-ingest", {
    SMTP_PORT: String(smallPort),
    SMTP_HOST: "127.0.0.1",
    MAX_MESSAGE_BYTES: String(MB),
  });
  const engine = start("rule-engine", { RULE_ENGINE_CONCURRENCY: "1", DNS_SERVERS: "127.0.0.1:9" });
  await Promise.all([listening(bigPort), listening(smallPort)]);
  // Let the engine start its parser threads and connect before taking its baseline.
  await waitFor(async () => memory(engine.pid!).now > 50, { what: "rule engine up", timeoutMs: 30_000 });
  await new Promise((r) => setTimeout(r, 2_000));
  const before = { ingest: memory(ingest.pid!), strict: memory(strict.pid!), engine: memory(engine.pid!) };

  // 1. The big legitimate message.
  const size = attachmentMB * MB;
  const raw = Buffer.from(
    mimeWithAttachment({
      to: "in@bench-large.example",
      subject: "big one",
      messageId: `<big-${Date.now()}@outside.example>`,
      filename: "big.zip",
      contentType: "application/zip",
      content: Buffer.alloc(size, 0x5a),
    }),
  );
  const conn = await connect({ port: bigPort });
  const r = await send(conn, { from: "sender@outside.example", to: ["in@bench-large.example"] }, raw);
  conn.quit();
  if (!r.ok) throw new Error(`big message refused: ${r.response}`);
  const spoolId = /queued as (spl_\w+)/.exec(r.response)?.[1] as string;
  await waitFor(() => prisma.email.findFirst({ where: { spoolId }, select: { id: true } }), {
    what: "big message stored",
    timeoutMs: 120_000,
  });
  const afterBig = { ingest: memory(ingest.pid!), engine: memory(engine.pid!) };

  // 2. Far over the limit, streamed in 64 KB chunks (never held whole by this script either).
  const chunk = Buffer.alloc(64 * 1024, "a");
  let sent = 0;
  const total = overflowMB * MB;
  const body = new Readable({
    read() {
      if (sent === 0) this.push("Subject: too big\r\n\r\n");
      if (sent >= total) return void this.push(null);
      sent += chunk.length;
      this.push(chunk);
    },
  });
  const c2 = await connect({ port: smallPort });
  const over = await send(c2, { from: "sender@outside.example", to: ["in@bench-large.example"] }, body);
  c2.quit();
  const afterOverflow = memory(strict.pid!);

  console.log(`message: ${attachmentMB} MB attachment, ${(raw.length / MB).toFixed(1)} MB on the wire`);
  console.log(`rule-engine  before: ${fmt(before.engine)}  after: ${fmt(afterBig.engine)}`);
  console.log(`smtp-ingest  before: ${fmt(before.ingest)}  after: ${fmt(afterBig.ingest)}`);
  console.log(
    `overflow: ${(sent / MB).toFixed(0)} MB against a 1 MB limit → "${over.response.slice(0, 40)}"; ` +
      `smtp-ingest before: ${fmt(before.strict)}  after: ${fmt(afterOverflow)}`,
  );
} finally {
  for (const c of children) c.kill("SIGTERM");
  await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : null)));
  await prisma.$disconnect();
  await env.cleanup();
  await globalTeardown();
}
