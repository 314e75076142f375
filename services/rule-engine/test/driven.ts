import { afterAll, afterEach, beforeAll } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import { type Seeded, seedAddress, seedDomain, seedEndpoint } from "@mailroom/testing";
import type { ProcessDeps } from "../src/process.ts";
import type { RuleEngine } from "../src/worker.ts";
import { noDns, type Pipeline, startEngineOn, startPipeline } from "./pipeline.ts";

/** What a test that drives processing itself works with; filled in by the `beforeAll` of useDrivenPipeline. */
export type Driven = {
  p: Pipeline;
  /** The domain, with an `in` address routed to `endpointId` (an endpoint nothing listens on). */
  d: Seeded;
  endpointId: string;
  /** What processRecipient / processWithBudget take, as the worker would pass them. */
  deps: ProcessDeps;
};

/**
 * A pipeline with no engine running (each test calls the processing code itself, so nothing races
 * it), on a fresh database with one domain. Registers its own beforeAll / afterAll; read the fields
 * of the returned object inside tests only.
 */
export function useDrivenPipeline(domain: string): Driven {
  const t = {} as Driven;
  beforeAll(async () => {
    t.p = await startPipeline({ engine: false });
    t.d = await seedDomain(t.p.prisma, domain);
    t.endpointId = await seedEndpoint(t.p.prisma, t.d.accountId, "http://127.0.0.1:9/hook");
    await seedAddress(t.p.prisma, t.d, "in", { endpointId: t.endpointId });
    t.deps = {
      prisma: t.p.prisma,
      deliveryQueue: t.p.deliveryQueue,
      logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
      resolver: noDns,
      mtaHostname: "mx.mailroom.test",
      parser: t.p.parser,
    };
  });
  afterAll(async () => {
    await t.p?.stop();
  });
  return t;
}

/** What a test that queues jobs first and then starts the engine works with (useQueuedPipeline). */
export type Queued<T> = {
  p: Pipeline;
  seeded: T;
  /** Starts the rule engine's worker on the pipeline; it is closed after the test. */
  startEngine(opts: { concurrency: number; maxTries?: number }): RuleEngine;
};

/**
 * A pipeline with no engine running until a test starts one (startEngineOn), on a fresh database
 * seeded by `seed`. Registers its own beforeAll / afterEach / afterAll; read the fields inside
 * tests only.
 */
export function useQueuedPipeline<T>(seed: (p: Pipeline) => Promise<T>): Queued<T> {
  let engine: RuleEngine | null = null;
  const t = {
    startEngine(opts: { concurrency: number; maxTries?: number }) {
      engine = startEngineOn(t.p, opts);
      return engine;
    },
  } as Queued<T>;
  beforeAll(async () => {
    t.p = await startPipeline({ engine: false });
    t.seeded = await seed(t.p);
  });
  afterEach(async () => {
    await engine?.close();
    engine = null;
  });
  afterAll(async () => {
    await t.p?.stop();
  });
  return t;
}
