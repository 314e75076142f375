import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  type SpanKind,
  SpanStatusCode,
  type TimeInput,
  type Tracer,
  trace,
} from "@opentelemetry/api";

export { SpanKind } from "@opentelemetry/api";
export type { Attributes, Span };

/**
 * Where a span hangs: a span of this process, a W3C `traceparent` carried with the work (a spool
 * or email row), `null` for the root of a new trace, or absent for the span active here.
 */
export type Parent = Span | string | null | undefined;

export type SpanOptions = {
  parent?: Parent;
  attributes?: Attributes;
  /** When the work began, if before the span could be made (its parent was read from a row). */
  startTime?: TimeInput;
  kind?: SpanKind;
};

/**
 * A service's tracing. Disabled (`OTEL_EXPORTER_OTLP_ENDPOINT` unset): no SDK is loaded, `start`
 * hands back one shared no-op span, `run` and `step` only call their function and `traceparent`
 * is null, so an uninstrumented run pays a property read and a call.
 */
export type Tracing = {
  readonly enabled: boolean;
  /** A span the caller ends (it is not made active): for work that spans callbacks, like an SMTP transaction. */
  start(name: string, opts?: SpanOptions): Span;
  /** `fn` inside a new span, active for everything it awaits; ended when fn settles, an error recorded. */
  run<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T>;
  /** A child of the active span around `fn` (a step of the work); without an active span `fn` gets a no-op span. */
  step<T>(name: string, fn: (span: Span) => Promise<T>, attributes?: Attributes): Promise<T>;
  /** The W3C traceparent of `span` (default: the active one), to store with the work; null if none. */
  traceparent(span?: Span): string | null;
  /** Exports what is still buffered and stops (a service's last shutdown step). */
  shutdown(): Promise<void>;
};

const NOOP_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export const noTracing: Tracing = {
  enabled: false,
  start: () => NOOP_SPAN,
  run: (_name, _opts, fn) => fn(NOOP_SPAN),
  step: (_name, fn) => fn(NOOP_SPAN),
  traceparent: () => null,
  shutdown: async () => undefined,
};

/** `00-<trace id>-<span id>-<flags>` (W3C Trace Context, version 00); null for an invalid context. */
export function formatTraceparent(span: Span): string | null {
  const c = span.spanContext();
  if (!isSpanContextValid(c)) return null;
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * The context a stored traceparent names (a remote parent), or the root context when the value is
 * not one (absent, malformed, version ff, all-zero ids): the work then starts a trace of its own.
 */
export function contextOfTraceparent(value: string): Context {
  const m = TRACEPARENT.exec(value.trim());
  if (!m || m[1] === "ff" || (m[1] === "00" && m[5])) return ROOT_CONTEXT;
  const spanContext = {
    traceId: m[2] as string,
    spanId: m[3] as string,
    traceFlags: Number.parseInt(m[4] as string, 16),
    isRemote: true,
  };
  return isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

function contextOf(parent: Parent): Context {
  if (parent === undefined) return context.active();
  if (parent === null) return ROOT_CONTEXT;
  if (typeof parent === "string") return contextOfTraceparent(parent);
  return trace.setSpan(ROOT_CONTEXT, parent);
}

/** Marks the span failed with the error's message (and the exception event). */
export function recordFailure(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** The Tracing of an SDK tracer (sdk.ts makes one); `shutdown` flushes and stops its provider. */
export function tracingWith(tracer: Tracer, shutdown: () => Promise<void>): Tracing {
  const start = (name: string, opts: SpanOptions = {}) =>
    tracer.startSpan(
      name,
      { attributes: opts.attributes, startTime: opts.startTime, kind: opts.kind },
      contextOf(opts.parent),
    );
  const run = async <T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> => {
    const span = start(name, opts);
    try {
      return await context.with(trace.setSpan(contextOf(opts.parent), span), () => fn(span));
    } catch (err) {
      recordFailure(span, err);
      throw err;
    } finally {
      span.end();
    }
  };
  return {
    enabled: true,
    start,
    run,
    step: (name, fn, attributes) =>
      trace.getSpan(context.active()) ? run(name, attributes ? { attributes } : {}, fn) : fn(NOOP_SPAN),
    traceparent: (span) => {
      const s = span ?? trace.getSpan(context.active());
      return s ? formatTraceparent(s) : null;
    },
    shutdown,
  };
}
