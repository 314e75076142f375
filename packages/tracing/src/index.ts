export * from "./sdk.ts";
export * from "./tracing.ts";
