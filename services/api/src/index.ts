// The API's composition root and what starting it takes: main.ts and the in-process test stack
// (@mailroom/stack) start it the same way.
export * from "./env.ts";
export type { EventHub } from "./events/hub.ts";
export type { RateLimitConfig } from "./lib/rate-limit.ts";
export * from "./service.ts";
