import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import { createQueue, createRedis, type Redis } from "@mailroom/queues";
import { type IngestEnv, ingestEnv } from "@mailroom/stack";
import {
  type OtlpReceiver,
  seedAddress,
  seedDomain,
  sendOnce,
  simpleMessage,
  startOtlpReceiver,
  waitFor,
} from "@mailroom/testing";
import { startTracing, type Tracing } from "@mailroom/tracing";
import { createParser } from "../src/parse.ts";
import { sweepPendingRecipients } from "../src/sweeper.ts";
import { type RuleEngine, startRuleEngine } from "../src/worker.ts";
import { noDns } from "./pipeline.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

/**
 * The trace context of a message travels on its rows, not in its job: an `inbound` job lost with
 * Redis and queued again by the sweeper (which knows only the recipient id) is still processed in
 * the SMTP transaction's trace.
 */
describe("rule-engine spans join the message's trace", () => {
  let t: IngestEnv;
  let otlp: OtlpReceiver;
  let tracing: Tracing;
  let workerRedis: Redis;
  let engine: RuleEngine | undefined;
  const parser = createParser({ threads: 1 });

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    tracing = await startTracing(
      "traced",
      {
        OTEL_SDK_DISABLED: false,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_TRACES_SAMPLER: "parentbased_always_on",
        OTEL_BSP_SCHEDULE_DELAY: 50,
        OTEL_BSP_EXPORT_TIMEOUT: 10_000,
        OTEL_BSP_MAX_QUEUE_SIZE: 2048,
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 512,
      },
      logger,
    );
    t = await ingestEnv();
    workerRedis = createRedis(t.env.redisUrl, "worker");
  });
  afterAll(async () => {
    await engine?.close();
    await parser.close();
    workerRedis?.disconnect();
    await t?.close();
    await tracing?.shutdown();
    await otlp?.close();
  });

  it("a job rebuilt by the sweeper is processed under the SMTP transaction's span", async () => {
    const d = await seedDomain(t.prisma, "traced.example");
    await seedAddress(t.prisma, d, "in");
    const ingest = await t.start({ tracing });
    const r = await sendOnce(
      { port: ingest.port },
      { from: "a@sender.example", to: ["in@traced.example"] },
      simpleMessage("a@sender.example", "in@traced.example", "traced"),
    );
    const spoolId = /queued as (spl_\w+)/.exec(r.response)?.[1] as string;
    const rcpt = await t.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId } });
    // Redis lost the job: the sweeper queues it again, knowing only the recipient id.
    await waitFor(async () => (await t.queue.getJob(rcpt.id)) ?? null, { what: "the ingest's job" });
    await (await t.queue.getJob(rcpt.id))?.remove();
    expect(await sweepPendingRecipients(t.prisma, t.queue, logger, { olderThanMs: 0 })).toBe(1);
    expect((await t.queue.getJob(rcpt.id))?.data).toEqual({ spoolRecipientId: rcpt.id });

    engine = startRuleEngine({
      prisma: t.prisma,
      logger,
      deliveryQueue: createQueue("delivery", { connection: t.redis, prefix: t.env.redisPrefix }),
      inboundQueue: t.queue,
      connection: workerRedis,
      prefix: t.env.redisPrefix,
      concurrency: 1,
      sweepIntervalMs: 3_600_000,
      resolver: noDns,
      mtaHostname: "mx.mailroom.test",
      parser,
      tracing,
    });
    const spans = await waitFor(
      async () => {
        const accept = otlp.spans.find(
          (s) => s.name === "smtp accept" && s.attributes["mailroom.spool_id"] === spoolId,
        );
        const process = otlp.spans.find(
          (s) => s.name === "rule-engine process" && s.attributes["mailroom.spool_id"] === spoolId,
        );
        return accept && process ? { accept, process } : null;
      },
      { what: "the accept and processing spans" },
    );
    expect(spans.process).toMatchObject({ traceId: spans.accept.traceId, parentSpanId: spans.accept.spanId });
    expect(spans.process.attributes["mailroom.outcome"]).toBe("stored");
    const email = await t.prisma.email.findFirstOrThrow({ where: { spoolId } });
    expect(email.traceparent).toBe(`00-${spans.accept.traceId}-${spans.process.spanId}-01`);
    await ingest.close();
  }, 60_000);
});
