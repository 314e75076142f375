import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import { type OtlpReceiver, startOtlpReceiver, waitFor } from "@mailroom/testing";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { startTracing, type TracingSettings, tracesUrl } from "./sdk.ts";
import { contextOfTraceparent, noTracing, type Tracing } from "./tracing.ts";

const settings = (over: Partial<TracingSettings> = {}): TracingSettings => ({
  OTEL_SDK_DISABLED: false,
  OTEL_TRACES_SAMPLER: "parentbased_always_on",
  OTEL_BSP_SCHEDULE_DELAY: 50,
  OTEL_BSP_EXPORT_TIMEOUT: 10_000,
  OTEL_BSP_MAX_QUEUE_SIZE: 2048,
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 512,
  ...over,
});
const logger = createLogger("tracing-test", "silent");

describe("tracing off", () => {
  it("without an endpoint (or with OTEL_SDK_DISABLED) startTracing is noTracing: no span, no traceparent", async () => {
    expect(await startTracing("svc", settings(), logger)).toBe(noTracing);
    const disabled = settings({ OTEL_SDK_DISABLED: true, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1" });
    expect(await startTracing("svc", disabled, logger)).toBe(noTracing);
    expect(await noTracing.run("x", {}, async (span) => span.isRecording())).toBe(false);
    expect(await noTracing.step("x", async () => 7)).toBe(7);
    expect(noTracing.traceparent(noTracing.start("x"))).toBeNull();
  });

  it("the traces URL: the signal's own as given, else the base plus /v1/traces", () => {
    expect(tracesUrl(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" }))).toBe("http://c:4318/v1/traces");
    const both = settings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t/x",
    });
    expect(tracesUrl(both)).toBe("http://t/x");
  });
});

describe("traceparent", () => {
  it("reads a W3C traceparent as a remote parent, and anything else as no parent", () => {
    const ctx = trace.getSpanContext(contextOfTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    expect(ctx).toEqual({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      traceFlags: 1,
      isRemote: true,
    });
    for (const bad of [
      "",
      "garbage",
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
    ])
      expect(contextOfTraceparent(bad)).toBe(ROOT_CONTEXT);
  });
});

describe("tracing on, exported to a real OTLP/HTTP receiver", () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracing = await startTracing("svc", settings({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }), logger);
  });
  afterAll(async () => {
    await tracing?.shutdown();
    await receiver?.close();
  });

  it("steps are children of the active span; a stored traceparent continues the trace; failures are marked", async () => {
    let stored = "";
    await tracing.run("work", { parent: null }, async () => {
      await tracing.step("step one", async () => undefined);
      stored = tracing.traceparent() ?? "";
    });
    // Later, elsewhere (another process reading the row): the same trace.
    await expect(
      tracing.run("continued", { parent: stored }, async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");

    const spans = await waitFor(async () => (receiver.spans.length >= 3 ? receiver.spans : null), { what: "3 spans" });
    const byName = Object.fromEntries(spans.map((s) => [s.name, s]));
    const work = byName.work!;
    expect(stored).toBe(`00-${work.traceId}-${work.spanId}-01`);
    expect(work).toMatchObject({ service: "svc", parentSpanId: "", statusCode: 0 });
    expect(byName["step one"]).toMatchObject({ traceId: work.traceId, parentSpanId: work.spanId });
    expect(byName.continued).toMatchObject({ traceId: work.traceId, parentSpanId: work.spanId, statusCode: 2 });
    expect(receiver.rejected).toEqual([]);
  });
});
