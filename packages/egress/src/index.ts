export * from "./delivery.ts";
export * from "./lookup.ts";
export * from "./request.ts";
