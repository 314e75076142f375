// Steady SMTP load across the live smtp-ingest replicas (a client-side load balancer: a replica
// leaves the rotation when it is told to stop, and a refused connection is tried on another), with
// some large uploads always in progress, and the webhook receiver the deliveries arrive at.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { type Outcome, sendMessage } from "./smtp.ts";

export type LoadOptions = {
  /** The ports a new session may go to now. */
  ports: () => number[];
  to: string;
  /** Small messages started per second (open loop). */
  ratePerSec: number;
  smallBytes: number;
  /** Large uploads kept in progress at all times. */
  bigInProgress: number;
  bigBytes: number;
  /** How long a large upload's body takes to send, at least (a slow link). */
  bigPaceMs: number;
};

export type Load = {
  /** Every session, the refused ones included. */
  outcomes: Outcome[];
  stop(): Promise<Outcome[]>;
};

/** Sends `tag` on a live replica, retrying a refusal on another; every session is recorded. */
async function deliverOnce(
  o: LoadOptions,
  outcomes: Outcome[],
  m: { tag: string; bytes: number; big: boolean; paceMs?: number },
) {
  for (let tries = 0; tries < 50; tries++) {
    const ports = o.ports();
    const port = ports[Math.floor(Math.random() * ports.length)];
    if (port === undefined) {
      await delay(100);
      continue;
    }
    const r = await sendMessage(port, { ...m, to: o.to });
    outcomes.push(r);
    if (!r.refused) return;
    await delay(50);
  }
}

export function startLoad(o: LoadOptions, tagPrefix = "m"): Load {
  const outcomes: Outcome[] = [];
  const inFlight = new Set<Promise<void>>();
  let running = true;
  let n = 0;
  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  const started = performance.now();
  const small = (async () => {
    for (let i = 0; running; i++) {
      const due = started + (i * 1000) / o.ratePerSec;
      const wait = due - performance.now();
      if (wait > 0) await delay(wait);
      if (!running) break;
      track(deliverOnce(o, outcomes, { tag: `${tagPrefix}-s${n++}`, bytes: o.smallBytes, big: false }));
    }
  })();
  const bigs = Array.from({ length: o.bigInProgress }, async () => {
    while (running) {
      await deliverOnce(o, outcomes, {
        tag: `${tagPrefix}-b${n++}`,
        bytes: o.bigBytes,
        big: true,
        paceMs: o.bigPaceMs,
      });
    }
  });
  return {
    outcomes,
    async stop() {
      running = false;
      await small;
      await Promise.all(bigs);
      await Promise.all([...inFlight]);
      return outcomes;
    },
  };
}

export type Arrival = { deliveryId: string; at: number; endpoint: string };

/** A webhook receiver that answers after `holdMs` and counts the requests in flight per endpoint path. */
export type CountingReceiver = {
  url: string;
  arrivals: Map<string, Arrival[]>;
  /** The most requests one endpoint path had in flight at once. */
  maxConcurrent: Map<string, number>;
  close(): Promise<void>;
};

export async function startCountingReceiver(holdMs: number): Promise<CountingReceiver> {
  const arrivals = new Map<string, Arrival[]>();
  const inFlight = new Map<string, number>();
  const maxConcurrent = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    const now = (inFlight.get(path) ?? 0) + 1;
    inFlight.set(path, now);
    maxConcurrent.set(path, Math.max(maxConcurrent.get(path) ?? 0, now));
    res.once("close", () => inFlight.set(path, (inFlight.get(path) ?? 1) - 1));
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; data: { email: { subject: string } } };
      const list = arrivals.get(body.data.email.subject) ?? [];
      list.push({ deliveryId: body.id, at, endpoint: path });
      arrivals.set(body.data.email.subject, list);
      setTimeout(() => res.end("ok"), holdMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    maxConcurrent,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
