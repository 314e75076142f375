import { z } from "zod";
import { envBoolean } from "./env-boolean.ts";

const optionalUrl = z
  .string()
  .optional()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(z.string().url("must be a URL such as http://collector:4318").optional());

const ms = (defaultValue: number) => z.coerce.number().int().positive().default(defaultValue);

/**
 * The standard OpenTelemetry variables of the services that emit spans (smtp-ingest, rule-engine,
 * webhook-dispatcher, outbound-sender; @mailroom/tracing). Tracing is on when an OTLP endpoint is
 * set; the exporter reads the rest of the OTEL_EXPORTER_OTLP_* settings (headers, timeout,
 * compression, certificates) and the resource variables (OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES) from the environment itself.
 */
export const tracingEnv = {
  /** OTLP/HTTP base URL (spans go to `<it>/v1/traces`); unset: no tracing, no SDK loaded. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
  /** The traces URL itself, used as given (takes precedence over the base). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalUrl,
  /** Only OTLP/HTTP with JSON bodies is sent; another protocol is refused at start, not ignored. */
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(["http/json"], "only http/json is supported").optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.enum(["http/json"], "only http/json is supported").optional(),
  OTEL_SDK_DISABLED: envBoolean(false),
  OTEL_TRACES_SAMPLER: z
    .enum([
      "always_on",
      "always_off",
      "traceidratio",
      "parentbased_always_on",
      "parentbased_always_off",
      "parentbased_traceidratio",
    ])
    .default("parentbased_always_on"),
  /** The ratio of the *traceidratio samplers (0 to 1). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  /** Batch span processor: delay between exports, export deadline, buffer and batch sizes. */
  OTEL_BSP_SCHEDULE_DELAY: ms(5_000),
  OTEL_BSP_EXPORT_TIMEOUT: ms(30_000),
  OTEL_BSP_MAX_QUEUE_SIZE: ms(2_048),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: ms(512),
};
