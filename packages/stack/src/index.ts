// Test support that needs the services themselves, so it cannot live in @mailroom/testing (which
// every service's tests use, and which must not depend on a service). Imported by the services'
// tests, e2e/ and bench/ through the root package.json, which declares it: no service declares it,
// so the package graph has no cycle (root → stack → services → packages).
export * from "./console.ts";
export * from "./fixtures.ts";
export * from "./ingest.ts";
export * from "./stack.ts";
