export * from "./lookup.ts";
export * from "./request.ts";
