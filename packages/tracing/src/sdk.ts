import type { Logger } from "@mailroom/log";
import { context, DiagLogLevel, diag } from "@opentelemetry/api";
import type { Sampler } from "@opentelemetry/sdk-trace";
import { noTracing, type Tracing, tracingWith } from "./tracing.ts";

/** The standard OTEL_* variables the services read (packages/config tracingEnv validates them). */
export type TracingSettings = {
  OTEL_SDK_DISABLED: boolean;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  OTEL_TRACES_SAMPLER: string;
  OTEL_TRACES_SAMPLER_ARG?: number | undefined;
  OTEL_BSP_SCHEDULE_DELAY: number;
  OTEL_BSP_EXPORT_TIMEOUT: number;
  OTEL_BSP_MAX_QUEUE_SIZE: number;
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: number;
};

/**
 * Where spans go: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else `OTEL_EXPORTER_OTLP_ENDPOINT`
 * plus `/v1/traces` (the OTLP/HTTP convention); null when neither is set or the SDK is disabled.
 */
export function tracesUrl(env: TracingSettings): string | null {
  if (env.OTEL_SDK_DISABLED) return null;
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) return null;
  return `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, "")}/v1/traces`;
}

let contextManagerSet = false;

/**
 * A service's tracing, started by its composition root. Without an endpoint nothing is imported
 * beyond @opentelemetry/api (noTracing). With one, the SDK is loaded: spans batched
 * (OTEL_BSP_*) and sent as OTLP/HTTP JSON, `service.name` the service's own (OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES override it), sampled per OTEL_TRACES_SAMPLER (default: follow the
 * parent, sample roots), the exporter's other settings (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
 * certificates) read by it from the environment. Export failures are logged, at most once a minute.
 */
export async function startTracing(service: string, env: TracingSettings, logger: Logger): Promise<Tracing> {
  const url = tracesUrl(env);
  if (!url) return noTracing;
  const [sdk, { OTLPTraceExporter }, resources, { AsyncLocalStorageContextManager }] = await Promise.all([
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/context-async-hooks"),
  ]);
  diag.setLogger(exportFailures(logger), DiagLogLevel.WARN);
  // One context manager per process (the in-process test stack may start several services).
  if (!contextManagerSet) contextManagerSet = context.setGlobalContextManager(new AsyncLocalStorageContextManager());
  const resource = resources.resourceFromAttributes({ "service.name": service, "service.namespace": "mailroom" }).merge(
    resources.detectResources({
      detectors: [resources.resourceAttributesEnvDetector, resources.serviceNameEnvDetector],
    }),
  );
  const provider = new sdk.TracerProvider({
    resource,
    sampler: samplerOf(sdk, env),
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url }),
        scheduledDelayMillis: env.OTEL_BSP_SCHEDULE_DELAY,
        exportTimeoutMillis: env.OTEL_BSP_EXPORT_TIMEOUT,
        maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE,
        maxExportBatchSize: Math.min(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, env.OTEL_BSP_MAX_QUEUE_SIZE),
      }),
    ],
  });
  logger.info({ url, sampler: env.OTEL_TRACES_SAMPLER }, "tracing: spans exported over OTLP/HTTP");
  return tracingWith(provider.getTracer("mailroom"), () => provider.shutdown());
}

type Sdk = typeof import("@opentelemetry/sdk-trace");

/** OTEL_TRACES_SAMPLER (the standard names); `parentbased_*` follow a sampled or unsampled parent. */
export function samplerOf(
  sdk: Sdk,
  env: Pick<TracingSettings, "OTEL_TRACES_SAMPLER" | "OTEL_TRACES_SAMPLER_ARG">,
): Sampler {
  const ratio = () => new sdk.TraceIdRatioBasedSampler(env.OTEL_TRACES_SAMPLER_ARG ?? 1);
  switch (env.OTEL_TRACES_SAMPLER) {
    case "always_on":
      return new sdk.AlwaysOnSampler();
    case "always_off":
      return new sdk.AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_off":
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new sdk.ParentBasedSampler({ root: ratio() });
    default:
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}

/** The SDK's own complaints (a collector that cannot be reached), one line a minute at most. */
function exportFailures(logger: Logger) {
  let last = 0;
  let quiet = 0;
  const say = (message: string) => {
    const now = Date.now();
    if (now - last < 60_000) {
      quiet += 1;
      return;
    }
    logger.warn({ suppressed: quiet }, `tracing: ${message}`);
    last = now;
    quiet = 0;
  };
  const ignore = () => undefined;
  return { error: say, warn: say, info: ignore, debug: ignore, verbose: ignore };
}
