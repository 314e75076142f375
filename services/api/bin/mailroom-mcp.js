#!/usr/bin/env node
// `npx mailroom-mcp`: the stdio MCP bridge (services/api/src/mcp/stdio.ts). The source is
// TypeScript; tsx compiles it on the fly, so this runs on any Node that tsx supports.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/mcp/stdio.ts");
await main();
