// bench:e2e's neighbour trials: what a busy account costs every other account's mail. Account A
// (the neighbour) sends a flood of ordinary messages, or a backlog of poison messages that fail
// every processing try until their budget is used up; meanwhile account B (the bench's own
// account) sends a probe every 1/rate seconds over one connection. The figure is B's delay
// (SMTP 250 → webhook, and spool → stored from the rows) while A's backlog is pending.
import { performance } from "node:perf_hooks";
import { poisonMessage } from "@mailroom/testing";
import type pg from "pg";
import { fmt, load } from "./report.ts";
import { closedLoop, closeSmtp, type Envelope, openSmtp, sendOne } from "./smtp-load.ts";
import { type Latency, latency } from "./stats.ts";

export type NeighbourKind = "flood" | "poison";

export type NeighbourContext = {
  smtpPort: number;
  pool: pg.Pool;
  /** Webhook arrival time (performance.now()) by subject. */
  arrivals: Map<string, number>;
  /** The neighbour's account id and the address its mail goes to. */
  neighbour: { accountId: string; to: string };
  /** The probed account's address. */
  probeTo: string;
  /** Signed messages `${tag} ${i}` to `to` (the bench's own message shape). */
  prepare(tag: string, count: number, to: string): Promise<{ envs: Envelope[]; messages: Buffer[] }>;
};

export type NeighbourResult = {
  kind: NeighbourKind;
  /** Messages the neighbour sent, and how long its backlog took to be processed (s). */
  backlog: number;
  backlogSeconds: number;
  /** The probes' SMTP 250 → webhook, and spool → stored from the rows (ms). */
  probes: Latency;
  probesStored: Latency;
};

/** The neighbour's backlog is pending while any of its recipients is. */
async function neighbourPending(pool: pg.Pool, accountId: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM spool_recipients WHERE "accountId" = $1 AND status IN ('pending', 'storing')`,
    [accountId],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * One trial: the neighbour's `count` messages over 20 connections, probes at `probeRate` per second
 * from its first message until its backlog is processed; then every webhook is awaited.
 */
export async function neighbourTrial(
  ctx: NeighbourContext,
  kind: NeighbourKind,
  tag: string,
  count: number,
  probeRate: number,
): Promise<NeighbourResult> {
  const flood =
    kind === "flood"
      ? await ctx.prepare(`${tag}a`, count, ctx.neighbour.to)
      : poisonBacklog(`${tag}a`, count, ctx.neighbour.to);
  // Enough probes for the longest backlog we allow (the deadline below); each is used only once.
  const probeMessages = await ctx.prepare(`${tag}b`, Math.ceil(probeRate * 300), ctx.probeTo);
  const started = performance.now();
  let sent = false;
  const sending = closedLoop({
    port: ctx.smtpPort,
    connections: 20,
    count,
    env: (i) => flood.envs[i] as Envelope,
    message: (i) => flood.messages[i] as Buffer,
  }).finally(() => {
    sent = true;
  });
  const busy = async () => !sent || (await neighbourPending(ctx.pool, ctx.neighbour.accountId)) > 0;
  const probed = await probeWhile(ctx.smtpPort, probeRate, busy, probeMessages);
  await sending;
  const backlogSeconds = (performance.now() - started) / 1000;
  const probeSubjects = probed.map(([i]) => `${tag}b ${i}`);
  await waitForArrivals(ctx.arrivals, [...probeSubjects, ...Array.from({ length: count }, (_, i) => `${tag}a ${i}`)]);
  const probes = latency(probed.map(([i, at]) => (ctx.arrivals.get(`${tag}b ${i}`) as number) - at));
  const probesStored = latency(await storedDelays(ctx.pool, `${tag}b %`));
  console.log(
    `${tag} ${kind}: ${count} neighbour messages processed in ${fmt(backlogSeconds)} s; ${probes.n} probes, ` +
      `250 → webhook p50 ${fmt(probes.p50)} p99 ${fmt(probes.p99)} max ${fmt(probes.max)} ms, ` +
      `spool → stored p99 ${fmt(probesStored.p99)} ms — ${load()}`,
  );
  return { kind, backlog: count, backlogSeconds, probes, probesStored };
}

function poisonBacklog(tag: string, count: number, to: string) {
  const envs = Array.from({ length: count }, () => ({ from: "mallory@outside.example", to }));
  // A message that fails every try (a 4,000-character Message-ID breaks the btree: 54000).
  return { envs, messages: envs.map((e, i) => Buffer.from(poisonMessage(e.to, `${tag} ${i}`, `<${e.from}>`))) };
}

/** One connection, one probe every 1/rate s while `busy()`; returns [probe number, time of its 250]. */
async function probeWhile(
  port: number,
  rate: number,
  busy: () => Promise<boolean>,
  probes: { envs: Envelope[]; messages: Buffer[] },
): Promise<[number, number][]> {
  const conn = await openSmtp(port);
  const out: [number, number][] = [];
  const t0 = performance.now();
  try {
    for (let i = 0; i < probes.messages.length; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (!(await busy())) break;
      const reply = await sendOne(conn, probes.envs[i] as Envelope, probes.messages[i] as Buffer);
      if (reply.startsWith("250")) out.push([i, performance.now()]);
    }
  } finally {
    closeSmtp(conn);
  }
  if (out.length === probes.messages.length) throw new Error("the neighbour's backlog outlasted the probes");
  return out;
}

async function waitForArrivals(arrivals: Map<string, number>, subjects: string[]): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (subjects.some((s) => !arrivals.has(s))) {
    if (Date.now() > deadline) {
      const missing = subjects.filter((s) => !arrivals.has(s));
      throw new Error(`${missing.length} webhooks missing after the deadline (first: ${missing[0]})`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Spool → stored (ms) of the emails whose subject matches. */
async function storedDelays(pool: pg.Pool, subjectLike: string): Promise<number[]> {
  const { rows } = await pool.query<{ ms: number }>(
    `SELECT extract(epoch FROM e."createdAt" - s."receivedAt") * 1000 AS ms
       FROM emails e JOIN spooled_messages s ON s.id = e."spoolId"
      WHERE e.subject LIKE $1`,
    [subjectLike],
  );
  return rows.map((r) => Number(r.ms));
}
