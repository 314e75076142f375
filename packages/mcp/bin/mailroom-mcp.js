#!/usr/bin/env node
// `mailroom-mcp`: the stdio MCP bridge. Installed from the registry it runs the compiled dist/cli.js;
// in a checkout (src/ present, not published) it runs the TypeScript source through tsx, so a stale
// build is never picked up there.
import { existsSync } from "node:fs";

const source = new URL("../src/cli.ts", import.meta.url);
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else {
  await import("../dist/cli.js");
}
