/** What the MCP server says about itself; shared by /mcp and the stdio bridge (which must stay light). */
export const MCP_SERVER_NAME = "mailroom";
export const MCP_SERVER_VERSION = "0.1.0";

export const MCP_INSTRUCTIONS =
  "mailroom receives email for your domains. Inboxes (addresses) on a domain store mail and can deliver it " +
  "to webhook endpoints; shield rules allow, block or reroute mail before it is stored. Read tools " +
  "(list_*, get_*) and wait_for_email (blocks until matching mail arrives) work with any API key; " +
  "create_inbox, create_shield_rule, delete_shield_rule, send_email and reply_to_email need a full-access " +
  "key. Results are the same JSON objects as the REST API (/api/v1).";
