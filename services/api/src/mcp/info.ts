// The MCP server's name, version and instructions are defined once, in the published stdio bridge
// (packages/mcp, `mailroom-mcp`), which must present itself exactly as /mcp does. A relative import:
// the package's exports point at its build, which a checkout does not have.
export { MCP_INSTRUCTIONS, MCP_SERVER_NAME, MCP_SERVER_VERSION } from "../../../../packages/mcp/src/info.ts";
