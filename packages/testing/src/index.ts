export * from "./dns-server.ts";
export * from "./env.ts";
export * from "./mime.ts";
export * from "./packed.ts";
export * from "./receiver.ts";
export * from "./redis-cluster.ts";
export * from "./servers.ts";
export * from "./throwaway.ts";
