import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import { createQueue, createRedis } from "@mailroom/queues";
import {
  type DnsServer,
  seedAddress,
  seedDomain,
  seedEndpoint,
  sendOnce,
  simpleMessage,
  startDnsServer,
  startThrowawayRedis,
  type ThrowawayRedis,
  waitFor,
} from "@mailroom/testing";
import { createDnsResolve } from "../src/resolver.ts";
import { startRuleEngine } from "../src/worker.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";
import { poisonMessage } from "./poison-message.ts";

const root = resolve(import.meta.dirname, "../../..");

/** Accepted mail survives a rule engine killed mid-job and a Redis that lost everything. */
describe("crash safety", () => {
  let p: Pipeline;
  let dns: DnsServer;
  let endpointId: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    dns = await startDnsServer({});
    p = await startPipeline({ engine: false });
    const d = await seedDomain(p.prisma, "crash.example");
    endpointId = await seedEndpoint(p.prisma, d.accountId, "http://127.0.0.1:9/hook");
    await seedAddress(p.prisma, d, "in", { endpointId });
  });
  afterEach(async () => {
    for (const c of children.splice(0)) {
      if (c.exitCode === null && c.signalCode === null) {
        const exited = new Promise((r) => c.once("exit", r));
        c.kill("SIGKILL");
        await exited;
      }
    }
  });
  afterAll(async () => {
    await p?.stop();
    await dns?.close();
  });

  /** The real rule-engine process (main.ts), as deployed. */
  const startEngineProcess = () => {
    const child = spawn(process.execPath, ["--import", "tsx", "services/rule-engine/src/main.ts"], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: p.env.databaseUrl,
        REDIS_URL: p.env.redisUrl,
        REDIS_PREFIX: p.env.redisPrefix,
        DNS_SERVERS: dns.server,
        RULE_ENGINE_CONCURRENCY: "1",
        RULE_ENGINE_LOCK_MS: "1000",
        SWEEP_INTERVAL_MS: "3600000",
        LOG_LEVEL: "silent",
      },
      stdio: "ignore",
    });
    children.push(child);
    return child;
  };

  it("a rule engine killed mid-job: the job is taken over and stored exactly once", async () => {
    // DNS answers held back: the engine parses, then waits on SPF/DKIM lookups — mid-job.
    dns.setDelay(60_000);
    const r = await sendOnce(
      { port: p.ingest.port },
      { from: "a@sender.example", to: ["in@crash.example"] },
      simpleMessage("a@sender.example", "in@crash.example", "crash"),
    );
    const spoolId = /queued as (spl_\w+)/.exec(r.response)![1]!;
    const first = startEngineProcess();
    await waitFor(async () => (await p.queue.getActiveCount()) === 1 && dns.queries.length > 0, {
      what: "the engine to be mid-job",
      timeoutMs: 30_000,
    });
    const exited = new Promise((r) => first.once("exit", r));
    first.kill("SIGKILL");
    await exited;
    expect(await p.prisma.email.count({ where: { spoolId } })).toBe(0);

    dns.setDelay(0);
    startEngineProcess();
    await p.processed(spoolId);
    const emails = await p.prisma.email.findMany({ where: { spoolId }, include: { deliveries: true } });
    expect(emails).toHaveLength(1);
    expect(emails[0]!.deliveries.map((d) => d.endpointId)).toEqual([endpointId]);
  }, 90_000);

  describe("with a Redis that restarts empty", () => {
    let redis: ThrowawayRedis;
    beforeAll(async () => {
      redis = await startThrowawayRedis();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it("loses no accepted message: the sweeper re-queues from the Postgres spool, and the worker reconnects", async () => {
      const producer = createRedis(redis.url, "producer");
      const workerConn = createRedis(redis.url, "worker");
      producer.on("error", () => undefined);
      workerConn.on("error", () => undefined);
      const inbound = createQueue("inbound", { connection: producer, prefix: p.env.redisPrefix });
      const delivery = createQueue("delivery", { connection: producer, prefix: p.env.redisPrefix });
      inbound.on("error", () => undefined);
      delivery.on("error", () => undefined);
      const ingest = await p.start({ queue: inbound });
      const send = async (subject: string) => {
        const r = await sendOnce(
          { port: ingest.port },
          { from: "a@sender.example", to: ["in@crash.example"] },
          simpleMessage("a@sender.example", "in@crash.example", subject),
        );
        expect(r.response).toMatch(/^250 /);
        return /queued as (spl_\w+)/.exec(r.response)![1]!;
      };
      let engine: ReturnType<typeof startRuleEngine> | null = null;
      try {
        // Accepted while no engine runs; then Redis dies without persistence and comes back empty.
        const lost = await send("accepted before the restart");
        // The job is queued just after the 250 (smtp-ingest spool.ts): wait until it is in Redis,
        // so that the restart below is what loses it.
        await waitFor(async () => (await inbound.count()) === 1, { what: "the job queued" });
        await redis.stop();
        await redis.start();
        await waitFor(async () => producer.status === "ready", { what: "producer reconnect" });

        engine = startRuleEngine({
          prisma: p.prisma,
          logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
          deliveryQueue: delivery,
          inboundQueue: inbound,
          connection: workerConn,
          prefix: p.env.redisPrefix,
          concurrency: 1,
          sweepIntervalMs: 200,
          sweepAfterMs: 0,
          resolver: createDnsResolve([dns.server]),
          mtaHostname: "mx.mailroom.test",
          parser: p.parser,
        });
        await p.processed(lost);

        // Redis restarts again under a running engine; mail accepted afterwards is processed.
        await redis.stop();
        await redis.start();
        await waitFor(async () => producer.status === "ready", { what: "producer reconnect" });
        const after = await send("accepted after the second restart");
        await p.processed(after);

        for (const spoolId of [lost, after]) {
          const emails = await p.prisma.email.findMany({ where: { spoolId }, include: { deliveries: true } });
          expect(emails).toHaveLength(1);
          expect(emails[0]!.deliveries).toHaveLength(1);
        }
      } finally {
        await engine?.close();
        await ingest.close();
        await inbound.close().catch(() => undefined);
        await delivery.close().catch(() => undefined);
        producer.disconnect();
        workerConn.disconnect();
      }
    }, 90_000);

    // CI-sized by default; the outside attack's numbers with POISON_BACKLOG=520 POISON_GOOD=100
    // POISON_PAGE=500 (allow several minutes).
    const poisonCount = Number(process.env.POISON_BACKLOG ?? 30);
    const goodCount = Number(process.env.POISON_GOOD ?? 10);
    const pageSize = Number(process.env.POISON_PAGE ?? 20);

    it(
      `${poisonCount} poison messages ahead (more than a sweeper page of ${pageSize}), then Redis restarted empty: all ${goodCount} good messages are stored and every poison one ends PROCESSING_FAILED`,
      async () => {
        const producer = createRedis(redis.url, "producer");
        const workerConn = createRedis(redis.url, "worker");
        producer.on("error", () => undefined);
        workerConn.on("error", () => undefined);
        const inbound = createQueue("inbound", { connection: producer, prefix: `${p.env.redisPrefix}poison:` });
        const delivery = createQueue("delivery", { connection: producer, prefix: `${p.env.redisPrefix}poison:` });
        inbound.on("error", () => undefined);
        delivery.on("error", () => undefined);
        await waitFor(async () => producer.status === "ready", { what: "producer ready" });
        const ingest = await p.start({ queue: inbound });
        const accept = async (raw: string) => {
          const r = await sendOnce({ port: ingest.port }, { from: "a@sender.example", to: ["in@crash.example"] }, raw);
          expect(r.response).toMatch(/^250 /);
          return /queued as (spl_\w+)/.exec(r.response)![1]!;
        };
        let engine: ReturnType<typeof startRuleEngine> | null = null;
        try {
          // Accepted while no engine runs: the poison ones first, so they are the oldest rows.
          const poison: string[] = [];
          for (let i = 0; i < poisonCount; i++)
            poison.push(await accept(poisonMessage("in@crash.example", `poison ${i}`)));
          const good: string[] = [];
          for (let i = 0; i < goodCount; i++)
            good.push(await accept(simpleMessage("a@sender.example", "in@crash.example", `good ${i}`)));
          // Jobs are queued just after each 250: wait until all are in Redis, then lose them all.
          await waitFor(async () => (await inbound.count()) === poisonCount + goodCount, { what: "every job queued" });
          await redis.stop();
          await redis.start();
          await waitFor(async () => producer.status === "ready", { what: "producer reconnect" });
          expect(await inbound.count()).toBe(0); // every job is gone

          engine = startRuleEngine({
            prisma: p.prisma,
            logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
            deliveryQueue: delivery,
            inboundQueue: inbound,
            connection: workerConn,
            prefix: `${p.env.redisPrefix}poison:`,
            concurrency: 2,
            sweepIntervalMs: 200,
            sweepAfterMs: 0,
            sweepPageSize: pageSize,
            resolver: createDnsResolve([dns.server]),
            mtaHostname: "mx.mailroom.test",
            parser: p.parser,
          });
          const spoolIds = [...poison, ...good];
          // Poison takes 5 tries with the inbound job's backoff (2, 4, 8, 16 s) before it is stored.
          await waitFor(
            async () =>
              (await p.prisma.spoolRecipient.count({
                where: { spoolId: { in: spoolIds }, status: { in: ["pending", "storing"] } },
              })) === 0,
            { what: "every message processed", timeoutMs: 240_000 + (poisonCount + goodCount) * 1_000 },
          );

          const emails = await p.prisma.email.findMany({
            where: { spoolId: { in: spoolIds } },
            include: { deliveries: true, spoolRecipient: true },
          });
          const bySpool = new Map(emails.map((e) => [e.spoolId, e]));
          expect(emails).toHaveLength(spoolIds.length);
          for (const id of good) {
            const e = bySpool.get(id)!;
            expect(e.spamVerdict).not.toBe("PROCESSING_FAILED");
            expect(e.deliveries.map((x) => x.endpointId)).toEqual([endpointId]);
          }
          for (const id of poison) {
            const e = bySpool.get(id)!;
            expect(e).toMatchObject({ spamVerdict: "PROCESSING_FAILED", spfVerdict: "PROCESSING_FAILED" });
            expect(e.spoolRecipient).toMatchObject({ status: "stored", attempts: 5 });
            expect(e.deliveries.map((x) => x.endpointId)).toEqual([endpointId]);
          }
        } finally {
          await engine?.close();
          await ingest.close();
          await inbound.close().catch(() => undefined);
          await delivery.close().catch(() => undefined);
          producer.disconnect();
          workerConn.disconnect();
        }
      },
      300_000 + (poisonCount + goodCount) * 1_500,
    );
  });
});
