export type { Job, Queue, Worker } from "bullmq";
export { DelayedError, UnrecoverableError } from "bullmq";
export * from "./catalog.ts";
export * from "./connections.ts";
export * from "./events.ts";
export * from "./fairness.ts";
export * from "./queues.ts";
export * from "./redis.ts";
export * from "./retry.ts";
