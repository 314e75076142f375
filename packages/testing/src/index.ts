export * from "./env.ts";
export * from "./receiver.ts";
export * from "./servers.ts";
export * from "./dns-server.ts";
