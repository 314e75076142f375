// What a fleet run did, from the sessions' replies, the rows in Postgres, the queues in Redis and
// the requests the receiver got: the correctness a rolling restart must keep, and the latency.
import type { PrismaClient } from "@mailroom/db";
import { createQueue, createRedis } from "@mailroom/queues";
import { waitFor } from "@mailroom/testing";
import { Redis } from "ioredis";
import type { CountingReceiver } from "./load.ts";
import type { Outcome } from "./smtp.ts";

export type Latency = { n: number; p50: number; p99: number; max: number };

export type FleetReport = {
  sessions: number;
  /** Sessions that reached 354. */
  dataStarted: number;
  accepted: number;
  /** Accepted messages with exactly one stored email. */
  stored: number;
  /** Accepted messages with no stored email. */
  lost: number;
  /** Accepted messages stored more than once. */
  storedTwice: number;
  /** Sessions that reached 354 and did not get a 250. */
  cut: Outcome[];
  /** Accepted messages the receiver never got. */
  undelivered: number;
  /** Messages that arrived under more than one delivery id. */
  twoDeliveryIds: number;
  /** Arrivals beyond the first under the same delivery id (a retried attempt). */
  repeats: number;
  maxConcurrent: Record<string, number>;
  /** 250 → first webhook arrival, ms, of the messages accepted in the window. */
  latency: Latency;
};

export function percentiles(values: number[]): Latency {
  const v = [...values].sort((a, b) => a - b);
  const at = (q: number) => v[Math.min(v.length - 1, Math.floor(q * v.length))] ?? Number.NaN;
  return { n: v.length, p50: at(0.5), p99: at(0.99), max: v.at(-1) ?? Number.NaN };
}

/** Waits until every accepted message arrived and nothing waits in the queues or the tables. */
export async function waitSettled(
  prisma: PrismaClient,
  redis: { url: string; prefix: string },
  outcomes: Outcome[],
  receiver: CountingReceiver,
  timeoutMs = 240_000,
): Promise<void> {
  const tags = outcomes.filter((o) => o.code === 250).map((o) => o.tag);
  const connection = createRedis(redis.url, "producer");
  const queues = (["inbound", "delivery"] as const).map((k) => createQueue(k, { connection, prefix: redis.prefix }));
  try {
    await waitFor(
      async () => {
        if (tags.some((t) => !receiver.arrivals.has(t))) return false;
        const open = await prisma.delivery.count({ where: { status: { not: "delivered" } } });
        const pending = await prisma.spoolRecipient.count({ where: { status: { in: ["pending", "storing"] } } });
        const counts = await Promise.all(
          queues.map((q) => q.getJobCounts("wait", "active", "delayed", "prioritized", "waiting-children")),
        );
        const jobs = counts.reduce((sum, c) => sum + Object.values(c).reduce((a, b) => a + b, 0), 0);
        return open === 0 && pending === 0 && jobs === 0;
      },
      { what: "every accepted message delivered and nothing left in the queues", timeoutMs, intervalMs: 500 },
    );
  } finally {
    await Promise.all(queues.map((q) => q.close()));
    connection.disconnect();
  }
}

export async function fleetReport(
  prisma: PrismaClient,
  outcomes: Outcome[],
  receiver: CountingReceiver,
  window: [number, number] = [0, Number.POSITIVE_INFINITY],
): Promise<FleetReport> {
  const accepted = outcomes.filter((o) => o.code === 250 && o.spoolId);
  const rows = await prisma.email.groupBy({
    by: ["spoolId"],
    where: { spoolId: { in: accepted.map((o) => o.spoolId ?? "") } },
    _count: { _all: true },
  });
  const stored = new Map(rows.map((r) => [r.spoolId ?? "", r._count._all]));
  const arrivals = accepted.map((o) => receiver.arrivals.get(o.tag) ?? []);
  return {
    sessions: outcomes.length,
    dataStarted: outcomes.filter((o) => o.dataStarted).length,
    accepted: accepted.length,
    stored: accepted.filter((o) => stored.get(o.spoolId ?? "") === 1).length,
    lost: accepted.filter((o) => !stored.get(o.spoolId ?? "")).length,
    storedTwice: accepted.filter((o) => (stored.get(o.spoolId ?? "") ?? 0) > 1).length,
    cut: outcomes.filter((o) => o.dataStarted && o.code !== 250),
    undelivered: arrivals.filter((a) => a.length === 0).length,
    twoDeliveryIds: arrivals.filter((a) => new Set(a.map((x) => x.deliveryId)).size > 1).length,
    repeats: arrivals.reduce((sum, a) => sum + Math.max(0, a.length - 1), 0),
    maxConcurrent: Object.fromEntries(receiver.maxConcurrent),
    latency: latencyIn(outcomes, receiver, window),
  };
}

/** 250 → first arrival (ms) of the accepted messages whose 250 came within `window`. */
export function latencyIn(outcomes: Outcome[], receiver: CountingReceiver, window: [number, number]): Latency {
  return percentiles(
    outcomes
      .filter((o) => o.code === 250 && (o.acceptedAt ?? 0) >= window[0] && (o.acceptedAt ?? 0) <= window[1])
      .map((o) => Math.min(...(receiver.arrivals.get(o.tag) ?? []).map((a) => a.at)) - (o.acceptedAt ?? 0)),
  );
}

/**
 * Jobs BullMQ found stalled (their lock lapsed: a worker went away holding them) in the `inbound`
 * and `delivery` queues' event streams: a drain that hands jobs back leaves none.
 */
export async function stalledJobs(redis: { url: string; prefix: string }): Promise<number> {
  const connection = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  try {
    let n = 0;
    for (const queue of ["inbound", "delivery"]) {
      const entries = await connection.xrange(`${redis.prefix}:${queue}:events`, "-", "+");
      n += entries.filter(([, fields]) => fields[0] === "event" && fields[1] === "stalled").length;
    }
    return n;
  } finally {
    connection.disconnect();
  }
}

/** One line per figure, for a test's log and the bench's table. */
export function describeReport(r: FleetReport): string {
  const l = r.latency;
  return [
    `sessions ${r.sessions}, in DATA ${r.dataStarted}, 250 ${r.accepted}, stored once ${r.stored}, lost ${r.lost},`,
    `stored twice ${r.storedTwice}, cut ${r.cut.length}, undelivered ${r.undelivered}, two delivery ids ${r.twoDeliveryIds},`,
    `repeats ${r.repeats}, max concurrent per endpoint ${JSON.stringify(r.maxConcurrent)},`,
    `250→webhook (n ${l.n}) p50 ${l.p50.toFixed(0)} ms, p99 ${l.p99.toFixed(0)} ms, max ${l.max.toFixed(0)} ms`,
  ].join(" ");
}
