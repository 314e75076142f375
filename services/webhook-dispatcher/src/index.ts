// The dispatcher's composition root: main.ts and the in-process test stack (@mailroom/stack) start it the same way.
export * from "./env.ts";
export * from "./service.ts";
