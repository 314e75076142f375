/**
 * What /mcp says about itself. The published stdio bridge (packages/mcp, `mailroom-mcp`) carries the
 * same three values in its own src/info.ts: it ships alone, so it cannot import them from here, and
 * this service does not import from another workspace's sources. test/mcp-stdio.test.ts checks
 * that the bridge presents itself exactly as /mcp does.
 */
export const MCP_SERVER_NAME = "mailroom";
export const MCP_SERVER_VERSION = "0.1.0";

export const MCP_INSTRUCTIONS =
  "mailroom receives email for your domains. Inboxes (addresses) on a domain store mail and can deliver it " +
  "to webhook endpoints; shield rules allow, block or reroute mail before it is stored. Read tools " +
  "(list_*, get_*) and wait_for_email (blocks until matching mail arrives) work with any API key; " +
  "create_inbox, create_shield_rule, delete_shield_rule, send_email and reply_to_email need a full-access " +
  "key. Results are the same JSON objects as the REST API (/api/v1).";
