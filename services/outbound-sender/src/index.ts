export * from "./env.ts";
export * from "./forward.ts";
export * from "./forward-worker.ts";
export * from "./message.ts";
export * from "./relay.ts";
export * from "./send.ts";
export * from "./sweeper.ts";
export * from "./worker.ts";
