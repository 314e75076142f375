import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import {
  createTestEnv,
  type DnsServer,
  seedAddress,
  seedDomain,
  seedEndpoint,
  startDnsServer,
  type TestEnv,
  waitFor,
} from "@mailroom/testing";
import { FLEET_SERVICES, type Fleet, startFleet } from "./fleet/fleet.ts";
import { type CountingReceiver, startCountingReceiver, startLoad } from "./fleet/load.ts";
import { describeReport, fleetReport, latencyIn, stalledJobs, waitSettled } from "./fleet/report.ts";
import { rollUnderLoad } from "./fleet/roll.ts";

/**
 * A rolling restart under load cuts nothing: two replicas each of smtp-ingest, rule-engine and
 * webhook-dispatcher as real processes, steady SMTP load with 5 MB uploads among the small messages,
 * each replica replaced in turn (a new one ready first, then the old one SIGTERMed). Every upload
 * in DATA when its replica is told to stop finishes with its 250 (one is started on purpose on each
 * stopping ingest replica, paced to run on past the 5 s at which smtp-server's close used to cut
 * it); every 250 is stored once and delivered under one delivery id; nothing is left in the queues;
 * every process exits 0; the per-endpoint limit holds across dispatcher replicas. CI-sized;
 * ROLLING_RESTART_FULL=1 runs the size (20 msg/s, four 5 MB uploads always in progress).
 * Latency is reported, not asserted (bench/replicas.ts measures it).
 */
const full = process.env.ROLLING_RESTART_FULL === "1";
const LOAD = {
  ratePerSec: full ? 20 : 3,
  smallBytes: 10_000,
  bigInProgress: full ? 4 : 1,
  bigBytes: 5 * 1024 * 1024,
  bigPaceMs: 8_000,
};
const ENDPOINT_LIMIT = 4;

describe("rolling restart of every replicated service under SMTP load", () => {
  let env: TestEnv;
  let prisma: PrismaClient;
  let dns: DnsServer;
  let receiver: CountingReceiver;
  let fleet: Fleet | undefined;
  beforeAll(async () => {
    env = await createTestEnv();
    prisma = createPrisma(env.databaseUrl, { max: 4 });
    dns = await startDnsServer({});
    receiver = await startCountingReceiver(20);
    const d = await seedDomain(prisma, "roll.example", { plan: "scale" });
    const endpointId = await seedEndpoint(prisma, d.accountId, `${receiver.url}/hook`);
    await seedAddress(prisma, d, "in", { endpointId });
  });
  afterAll(async () => {
    await fleet?.close();
    await receiver?.close();
    await dns?.close();
    await prisma?.$disconnect();
    await env?.cleanup();
  });

  it("cuts no upload, loses and duplicates nothing, and every process exits 0", async () => {
    fleet = await startFleet({
      env: {
        DATABASE_URL: env.databaseUrl,
        REDIS_URL: env.redisUrl,
        REDIS_PREFIX: env.redisPrefix,
        DNS_SERVERS: dns.server,
        LOG_LEVEL: "warn",
        SHUTDOWN_TIMEOUT_MS: "30000",
      },
      replicas: { "smtp-ingest": 2, "rule-engine": 2, "webhook-dispatcher": 2 },
      serviceEnv: {
        "smtp-ingest": { SMTP_MAX_CONNECTIONS_PER_IP: "200" },
        "webhook-dispatcher": {
          ALLOW_PRIVATE_DESTINATIONS: "true",
          DISPATCHER_ENDPOINT_CONCURRENCY: String(ENDPOINT_LIMIT),
        },
      },
    });
    const f = fleet;
    const load = startLoad({ ...LOAD, ports: () => f.smtpPorts(), to: "in@roll.example" }, "roll");
    await waitFor(async () => receiver.arrivals.size >= 5, { what: "mail flowing", timeoutMs: 180_000 });

    const rolled = await rollUnderLoad(f, load, {
      to: "in@roll.example",
      bytes: LOAD.bigBytes,
      paceMs: LOAD.bigPaceMs,
    });
    const { stopped, uploads, outcomes } = rolled;
    await waitSettled(prisma, { url: env.redisUrl, prefix: env.redisPrefix }, outcomes, receiver);
    const report = await fleetReport(prisma, outcomes, receiver, rolled.window);
    const phases = rolled.phases.map((p) => {
      const l = latencyIn(outcomes, receiver, p.window);
      return `${p.service} ${((p.window[1] - p.window[0]) / 1000).toFixed(0)} s: p50 ${l.p50.toFixed(0)} p99 ${l.p99.toFixed(0)} max ${l.max.toFixed(0)} ms`;
    });
    const stops = stopped.map((s) => `${s.name} ${s.exitedAt - s.signalledAt} ms, ${s.handedBack} handed back`);
    console.log(
      `rolling restart (${full ? "full" : "CI"} size): ${describeReport(report)}; ${phases.join("; ")}; ${stops.join("; ")}`,
    );

    expect(stopped.map((s) => [s.name, s.code])).toEqual(
      FLEET_SERVICES.flatMap((s) => [
        [s, 0],
        [s, 0],
      ]),
    );
    expect(uploads.map((u) => u.reply)).toEqual([expect.stringMatching(/^250 /), expect.stringMatching(/^250 /)]);
    expect(report.cut.map((c) => `${c.tag} on ${c.port}: ${c.reply}`)).toEqual([]);
    expect(report.accepted).toBeGreaterThan(0);
    expect(report).toMatchObject({ stored: report.accepted, lost: 0, storedTwice: 0 });
    expect(report).toMatchObject({ undelivered: 0, twoDeliveryIds: 0 });
    expect(report.maxConcurrent["/hook"]).toBeLessThanOrEqual(ENDPOINT_LIMIT);
    // Nothing was left to lock expiry: every stopping worker finished or handed back its jobs.
    expect(await stalledJobs({ url: env.redisUrl, prefix: env.redisPrefix })).toBe(0);
  }, 1_200_000);
});
