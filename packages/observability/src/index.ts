// Services define their own metrics with these, on the registry of their process.
export { Counter, Gauge, Histogram, Registry } from "prom-client";
export * from "./delivery-metrics.ts";
export * from "./dependency-errors.ts";
export * from "./health.ts";
export * from "./health-server.ts";
export * from "./observability.ts";
export * from "./queue-metrics.ts";
export * from "./registry.ts";
export * from "./service-lifecycle.ts";
export * from "./worker-boot.ts";
