export * from "./byte-store.ts";
export * from "./purge.ts";
export * from "./scheduler.ts";
