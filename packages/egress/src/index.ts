export * from "./delivery.ts";
export * from "./lookup.ts";
export * from "./pool.ts";
export * from "./request.ts";
export * from "./resolver.ts";
