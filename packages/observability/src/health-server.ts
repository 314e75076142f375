import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { listen } from "@mailroom/runtime";
import type { Registry } from "prom-client";
import type { Health } from "./health.ts";

export type HealthServer = { server: Server; port: number; close(): Promise<void> };

export type HealthServerOptions = {
  registry: Registry;
  health: Health;
  port: number;
  host: string;
  /** The setting the port came from, named when it cannot be bound (default HEALTH_PORT). */
  setting?: string;
};

/**
 * The small HTTP port every service serves beside its real work: `GET /healthz` (liveness),
 * `GET /readyz` (readiness: dependencies answer and not draining) and `GET /metrics` (Prometheus
 * text format). Resolves once it listens (port 0: an ephemeral port, reported in `port`) and
 * rejects when the port cannot be bound (a StartupError naming the setting), so a service never
 * runs without its probes.
 */
export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const { registry, health } = opts;
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    if (req.method !== "GET" && req.method !== "HEAD") return json(405, { error: "GET only" });
    if (path === "/healthz") return json(200, { ok: true });
    if (path === "/readyz") {
      health.ready().then(
        (r) => json(r.ok ? 200 : 503, r),
        (err: Error) => json(503, { ok: false, error: err.message }),
      );
      return;
    }
    if (path === "/metrics") {
      registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
        (err: Error) => json(500, { error: err.message }),
      );
      return;
    }
    json(404, { error: "not found; try /healthz, /readyz or /metrics" });
  });
  // Probes and scrapes are short; do not let an idle keep-alive socket hold shutdown open.
  server.keepAliveTimeout = 5_000;
  // A port that cannot be bound is one line naming the address and the setting (a StartupError).
  await listen(server, opts.port, opts.host, opts.setting ?? "HEALTH_PORT");
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
