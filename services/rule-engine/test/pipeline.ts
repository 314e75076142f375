import { createLogger } from "@mailroom/log";
import { createQueue, createRedis, type Redis, type TypedQueue } from "@mailroom/queues";
// The ingest harness alone: the package root also exports jest fixtures, which bench:rule-engine
// (run outside jest) cannot load.
import { type Ingest, type IngestEnv, ingestEnv } from "@mailroom/stack/ingest";
import { type SendOutcome, sendOnce, waitFor } from "@mailroom/testing";
import { createParser, type Parser } from "../src/parse.ts";
import type { ProcessDeps } from "../src/process.ts";
import type { DnsResolve } from "../src/verdicts.ts";
import { type RuleEngine, startRuleEngine } from "../src/worker.ts";

export type Pipeline = IngestEnv & {
  ingest: Ingest;
  engine: RuleEngine | null;
  deliveryQueue: TypedQueue<"delivery">;
  workerRedis: Redis;
  /** The engine's MIME parser (the one given, or one the pipeline owns), for deps built by a test. */
  parser: Parser;
  /** Sends raw MIME over SMTP; resolves with the reply and the spool id. */
  sendRaw(from: string, to: string[], raw: string | Buffer): Promise<SendOutcome & { spoolId: string | null }>;
  /** The recipient rows of a spooled message once none of them is pending any more. */
  processed(spoolId: string): Promise<{ id: string; status: string; recipient: string }[]>;
  stop(): Promise<void>;
};

/** A resolver that fails every lookup as an unknown name would: for tests with no DNS server. */
export const noDns: DnsResolve = async () => {
  throw Object.assign(new Error("no DNS in this test"), { code: "ENOTFOUND" });
};

/** SMTP ingest and the rule engine, wired as their main.ts files wire them, on a fresh database. */
export async function startPipeline(
  opts: { engine?: boolean; maxMessageBytes?: number } & Partial<
    Pick<ProcessDeps, "resolver" | "spam" | "parser" | "virus" | "trustedArcSealers">
  > = {},
): Promise<Pipeline> {
  const t = await ingestEnv();
  const ingest = await t.start({ maxMessageBytes: opts.maxMessageBytes ?? 30_000_000, maxRecipients: 50 });
  const workerRedis = createRedis(t.env.redisUrl, "worker");
  const deliveryQueue = createQueue("delivery", { connection: t.redis, prefix: t.env.redisPrefix });
  const parser = opts.parser ?? createParser({ threads: 2 });
  const engine =
    opts.engine === false
      ? null
      : startRuleEngine({
          prisma: t.prisma,
          logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
          deliveryQueue,
          inboundQueue: t.queue,
          connection: workerRedis,
          prefix: t.env.redisPrefix,
          concurrency: 2,
          sweepIntervalMs: 3_600_000,
          resolver: opts.resolver ?? noDns,
          mtaHostname: "mx.mailroom.test",
          ...(opts.spam ? { spam: opts.spam } : {}),
          ...(opts.virus ? { virus: opts.virus } : {}),
          ...(opts.trustedArcSealers ? { trustedArcSealers: opts.trustedArcSealers } : {}),
          parser,
        });
  return {
    ...t,
    ingest,
    engine,
    deliveryQueue,
    workerRedis,
    parser,
    async sendRaw(from, to, raw) {
      const r = await sendOnce({ port: ingest.port }, { from, to }, raw);
      return { ...r, spoolId: /queued as (spl_\w+)/.exec(r.response)?.[1] ?? null };
    },
    processed: (spoolId) =>
      waitFor(
        async () => {
          const rows = await t.prisma.spoolRecipient.findMany({ where: { spoolId } });
          // A duplicate's spool is purged with its rows: processed too.
          if (rows.length === 0) return (await t.prisma.spooledMessage.count({ where: { id: spoolId } })) ? null : rows;
          return rows.every((r) => r.status !== "pending" && r.status !== "storing") ? rows : null;
        },
        // A last guard, not an expectation of speed: a 25 MB message took over 30 s at load 25.
        { what: `spool ${spoolId} processed`, timeoutMs: 90_000 },
      ),
    async stop() {
      await engine?.close();
      if (!opts.parser) await parser.close();
      await deliveryQueue.close();
      workerRedis.disconnect();
      await t.close();
    },
  };
}

/**
 * The rule engine's worker on a pipeline started without one (`engine: false`), wired as
 * startPipeline wires it; for tests that queue jobs first and then let the engine take them.
 */
export function startEngineOn(p: Pipeline, opts: { concurrency: number; maxTries?: number }): RuleEngine {
  return startRuleEngine({
    prisma: p.prisma,
    logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
    deliveryQueue: p.deliveryQueue,
    inboundQueue: p.queue,
    connection: p.workerRedis,
    prefix: p.env.redisPrefix,
    concurrency: opts.concurrency,
    ...(opts.maxTries ? { maxTries: opts.maxTries } : {}),
    sweepIntervalMs: 3_600_000,
    resolver: noDns,
    mtaHostname: "mx.mailroom.test",
    parser: p.parser,
  });
}
