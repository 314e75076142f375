import http from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

/** One span as an OTLP/HTTP JSON export carried it, flattened with its resource's service name. */
export type CollectedSpan = {
  service: string;
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** 0 unset, 1 ok, 2 error (OTLP StatusCode). */
  statusCode: number;
  startNs: bigint;
  endNs: bigint;
};

/**
 * A real OTLP/HTTP trace collector on an ephemeral loopback port: decodes every JSON export
 * (`POST /v1/traces`, gzip or not) the way a collector would and keeps its spans. Anything it
 * cannot decode is answered 400 and kept in `rejected`, so a test sees a malformed export.
 */
export type OtlpReceiver = {
  /** The base to give as OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: CollectedSpan[];
  rejected: string[];
  close(): Promise<void>;
};

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  status?: { code?: number };
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
};
type Export = {
  resourceSpans: { resource?: { attributes?: KeyValue[] }; scopeSpans: { spans?: OtlpSpan[] }[] }[];
};

const plainValue = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.boolValue ?? ""));

const attributesOf = (kvs: KeyValue[] = []) => Object.fromEntries(kvs.map((kv) => [kv.key, plainValue(kv.value)]));

/** The spans of one export body; throws on anything that is not an OTLP JSON trace export. */
export function decodeOtlpJson(body: Buffer): CollectedSpan[] {
  const doc = JSON.parse(body.toString("utf8")) as Export;
  if (!Array.isArray(doc.resourceSpans)) throw new Error("no resourceSpans");
  return doc.resourceSpans.flatMap((rs) => {
    const service = String(attributesOf(rs.resource?.attributes)["service.name"] ?? "");
    return rs.scopeSpans.flatMap((ss) =>
      (ss.spans ?? []).map((s) => {
        if (!/^[0-9a-f]{32}$/.test(s.traceId) || !/^[0-9a-f]{16}$/.test(s.spanId)) throw new Error("bad span ids");
        return {
          service,
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? "",
          name: s.name,
          kind: s.kind,
          attributes: attributesOf(s.attributes),
          statusCode: s.status?.code ?? 0,
          startNs: BigInt(s.startTimeUnixNano),
          endNs: BigInt(s.endTimeUnixNano),
        };
      }),
    );
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: CollectedSpan[] = [];
  const rejected: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        if (req.method !== "POST" || req.url !== "/v1/traces") throw new Error(`${req.method} ${req.url}`);
        if (!String(req.headers["content-type"]).startsWith("application/json")) {
          throw new Error(`content-type ${req.headers["content-type"]}`);
        }
        const raw = Buffer.concat(chunks);
        spans.push(...decodeOtlpJson(req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw));
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
      } catch (err) {
        rejected.push((err as Error).message);
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ message: (err as Error).message }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    rejected,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
