export * from "./evaluate.ts";
export * from "./schema.ts";
