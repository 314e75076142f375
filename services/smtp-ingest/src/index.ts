// The ingest's composition root and its SMTP server: main.ts and the in-process test stack
// (@mailroom/stack) start it the same way; the server harness of the tests wraps createIngestServer.
export * from "./env.ts";
export { RouteCache } from "./route-cache.ts";
export { listenForRouteChanges, ROUTES_APPLICATION } from "./route-listener.ts";
export { createIngestServer, type IngestOptions } from "./server.ts";
export * from "./service.ts";
