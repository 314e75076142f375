export * from "./errors.ts";
export * from "./payload.ts";
export * from "./signing.ts";
export * from "./views.ts";
export * from "./shield/index.ts";
export * from "./plans.ts";
export * from "./ssrf.ts";
export * from "./chat.ts";
