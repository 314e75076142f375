export type { Counter, Gauge, Histogram } from "prom-client";
export * from "./dependency-errors.ts";
export * from "./health.ts";
export * from "./health-server.ts";
export * from "./observability.ts";
export * from "./queue-metrics.ts";
export * from "./registry.ts";
