export * from "./attempt-store.ts";
export * from "./batcher.ts";
export * from "./route.ts";
export * from "./settle.ts";
export * from "./store.ts";
export * from "./sweeper.ts";
