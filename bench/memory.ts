// Memory of the mail path under big messages (issue 12 item 4, issue 13 `bench:memory`). Runs
// smtp-ingest and the rule engine as real processes (their main.ts, as an operator starts them) on a
// bench database of its own, and prints each process's peak RSS (VmHWM from /proc/<pid>/status):
//   1. one message with a 25 MB attachment (≈ 34 MB on the wire), SMTP → stored;
//   2. 20 connections each sending a 25 MB message at the same time, SMTP → 250 → stored.
// Each scenario gets fresh processes, so one peak does not hide the other. Target (issue 12/13):
// ingest peak ≤ 300 MB in scenario 2.
// Run: `npm run -s bench:memory` (or `node --import tsx bench/memory.ts [attachmentMB] [connections] [messageMB]`).
import { mimeWithAttachment, seedAddress, seedDomain, sparePort, waitFor } from "@mailroom/testing";
import { benchEnv } from "./lib/env.ts";
import { memoryMB, startService, stopAll, waitForPort } from "./lib/procs.ts";
import { fmt, footer, header, table } from "./lib/report.ts";
import { closeSmtp, openSmtp, plainMessage, sendOne } from "./lib/smtp-load.ts";

const attachmentMB = Number(process.argv[2] ?? 25);
const connections = Number(process.argv[3] ?? 20);
const messageMB = Number(process.argv[4] ?? 25);
const MB = 1024 * 1024;
const TO = "in@bench-memory.example";
const FROM = "sender@outside.example";

header(
  "bench:memory — peak RSS (VmHWM) of smtp-ingest and rule-engine",
  `${attachmentMB} MB attachment; ${connections} concurrent ${messageMB} MB messages; service defaults otherwise`,
);
const env = await benchEnv("memory");
const rows: (string | number)[][] = [];

/** Fresh ingest + rule engine; `run` sends mail and waits until it is stored; returns the peaks. */
async function scenario(name: string, run: (port: number) => Promise<number>): Promise<void> {
  const port = await sparePort();
  const ingest = startService("smtp-ingest", {
    ...env.serviceEnv,
    SMTP_PORT: String(port),
    SMTP_HOST: "127.0.0.1",
    MAX_MESSAGE_BYTES: String(40 * MB),
  });
  // A resolver that refuses at once: this bench is about memory, not DNS.
  const engine = startService("rule-engine", { ...env.serviceEnv, DNS_SERVERS: "127.0.0.1:9" });
  try {
    await waitForPort(port, "smtp-ingest");
    await waitFor(async () => memoryMB(engine.pid).now > 50, { what: "rule engine up", timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 2_000)); // let both settle before the baseline
    const before = { ingest: memoryMB(ingest.pid), engine: memoryMB(engine.pid) };
    const onWire = await run(port);
    const after = { ingest: memoryMB(ingest.pid), engine: memoryMB(engine.pid) };
    const line = (svc: string, b: { now: number }, a: { peak: number }) =>
      rows.push([name, `${fmt(onWire / MB)} MB`, svc, fmt(b.now), fmt(a.peak), fmt(a.peak - b.now)]);
    line("smtp-ingest", before.ingest, after.ingest);
    line("rule-engine", before.engine, after.engine);
  } finally {
    await ingest.stop();
    await engine.stop();
  }
}

/** Waits until every spool has been processed (an Email or a terminal recipient status). */
async function stored(spoolIds: string[]): Promise<void> {
  await waitFor(
    async () => {
      const { rows: r } = await env.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM spool_recipients WHERE "spoolId" = ANY($1) AND status <> 'pending' AND status <> 'storing'`,
        [spoolIds],
      );
      return r[0]!.n === spoolIds.length;
    },
    { what: "the messages stored", timeoutMs: 15 * 60_000, intervalMs: 500 },
  );
}

const spoolOf = (reply: string): string => {
  const id = /queued as (spl_\w+)/.exec(reply)?.[1];
  if (!reply.startsWith("250") || !id) throw new Error(`message refused: ${reply}`);
  return id;
};

try {
  await seedAddress(env.prisma, await seedDomain(env.prisma, "bench-memory.example"), "in");

  await scenario(`one ${attachmentMB} MB attachment`, async (port) => {
    const raw = Buffer.from(
      mimeWithAttachment({
        to: TO,
        subject: "big one",
        messageId: `<big-${Date.now()}@outside.example>`,
        filename: "big.zip",
        contentType: "application/zip",
        content: Buffer.alloc(attachmentMB * MB, 0x5a),
      }),
    );
    const c = await openSmtp(port);
    const spoolId = spoolOf(await sendOne(c, { from: FROM, to: TO }, raw));
    closeSmtp(c);
    await stored([spoolId]);
    return raw.length;
  });

  await scenario(`${connections} × ${messageMB} MB at once`, async (port) => {
    const size = Math.floor(messageMB * 1_000_000);
    const conns = await Promise.all(Array.from({ length: connections }, () => openSmtp(port)));
    // One buffer per connection, all built before the first byte goes out (distinct Message-IDs).
    const messages = conns.map((_, i) => plainMessage({ from: FROM, to: TO }, size, `big ${i}`));
    const replies = await Promise.all(conns.map((c, i) => sendOne(c, { from: FROM, to: TO }, messages[i]!)));
    for (const c of conns) closeSmtp(c);
    await stored(replies.map(spoolOf));
    return messages[0]!.length;
  });

  table(["scenario", "on the wire", "process", "RSS before (MB)", "peak RSS (MB)", "peak − before (MB)"], rows);
} finally {
  await stopAll();
  await env.close();
  footer();
}
