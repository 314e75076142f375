import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type Receiver, startReceiver, waitFor } from "@mailroom/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import nodemailer from "nodemailer";

/**
 * The MCP interface (issue 8) driven by the official SDK client over real HTTP against every
 * service: tools, the same objects as REST, the scope matrix of spec §5.6, tenant isolation and
 * the errors an agent gets for bad arguments.
 */

type Result = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: any };

const READ_TOOLS = [
  "list_domains",
  "get_domain",
  "list_inboxes",
  "get_inbox",
  "list_endpoints",
  "get_endpoint",
  "list_emails",
  "get_email",
  "get_email_timeline",
  "list_threads",
  "get_thread",
  "list_shield_rules",
  "get_shield_rule",
  "list_blocks",
  "get_block",
  "list_deliveries",
  "get_delivery",
  "get_stats",
  "get_endpoint_health",
];
const WRITE_TOOLS = [
  "create_inbox",
  "create_shield_rule",
  "delete_shield_rule",
  "send_email",
  "reply_to_email",
  "retry_deliveries",
];
/** Read-only but blocking (issue 18; tested in mcp-agent-mail.test.ts): not called with READ_TOOLS' arguments. */
const WAIT_TOOLS = ["wait_for_email"];

describe("MCP over Streamable HTTP (/mcp)", () => {
  let stack: Stack;
  let receiver: Receiver;
  let a: TestAccount;
  let b: TestAccount;
  let readKey: string;
  let mcpA: Client;
  let mcpRead: Client;
  let mcpB: Client;
  const clients: Client[] = [];
  // Ids of account A's resources, filled in as the tests create them.
  const ids: Record<string, string> = {};

  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: "mailroom-mcp-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${stack.apiUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    clients.push(client);
    return client;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as Result;
  /** A successful result: the JSON text and the structured content are the same object. */
  const ok = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
    const r = await call(client, name, args);
    if (r.isError) throw new Error(`${name} failed: ${r.content[0]?.text}`);
    expect(JSON.parse(String(r.content[0]?.text))).toEqual(r.structuredContent);
    return r.structuredContent;
  };
  /** A tool error's message. */
  const fails = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
    const r = await call(client, name, args);
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toBeUndefined();
    return String(r.content[0]?.text);
  };
  const rest = async (acct: TestAccount, path: string) => {
    const r = await acct.api("GET", `/api/v1${path}`);
    expect(r.status).toBe(200);
    return r.body;
  };
  const send = (to: string, subject: string) =>
    nodemailer
      .createTransport({ host: "127.0.0.1", port: stack.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({ from: "Alice <alice@sender.example>", to, subject, text: `About ${subject}.\n` });

  beforeAll(async () => {
    stack = await startStack();
    receiver = await startReceiver();
    a = await stack.account({ plan: "scale" });
    b = await stack.account();
    readKey = String((await stack.admin("keys", "create", "--account", a.accountId, "--scope", "read")).key);
    [mcpA, mcpRead, mcpB] = await Promise.all([connect(a.key), connect(readKey), connect(b.key)]);

    const dom = await a.api("POST", "/api/v1/domains", { domain: "mcp-example.com" });
    expect(dom.status).toBe(201);
    ids.domain = dom.body.id;
    await stack.admin("domains", "verify", "--domain", "mcp-example.com", "--force");
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await receiver?.close();
    await stack?.close();
  });

  it("lists every tool with an object input schema, a description and read-only/destructive annotations", async () => {
    const { tools } = await mcpRead.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...READ_TOOLS, ...WRITE_TOOLS, ...WAIT_TOOLS].sort());
    for (const t of tools) {
      expect(t.inputSchema.type).toBe("object");
      expect(t.description?.length).toBeGreaterThan(40);
      expect(t.annotations?.readOnlyHint).toBe(READ_TOOLS.includes(t.name) || WAIT_TOOLS.includes(t.name));
      expect(t.annotations?.destructiveHint ?? false).toBe(t.name === "delete_shield_rule");
    }
    const byName = new Map(tools.map((t) => [t.name, t]));
    // The REST filters, with their rules, are the tool's parameters.
    expect(Object.keys(byName.get("list_emails")?.inputSchema.properties ?? {}).sort()).toEqual(
      [
        "addressId",
        "cursor",
        "direction",
        "domainId",
        "from",
        "limit",
        "q",
        "receivedAfter",
        "receivedBefore",
        "threadId",
      ].sort(),
    );
    expect(byName.get("create_inbox")?.inputSchema.required).toEqual(["domainId", "localPart"]);
    expect(byName.get("create_shield_rule")?.inputSchema.required).toEqual(["name", "action", "conditions"]);
  });

  it("describes every argument of every tool, nested ones (attachments, conditions) too", async () => {
    const { tools } = await mcpRead.listTools();
    const undescribed: string[] = [];
    type Schema = { description?: string; properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[] };
    const walk = (where: string, schema: Schema | undefined): void => {
      if (!schema) return;
      for (const [name, prop] of Object.entries(schema.properties ?? {})) {
        if (!prop.description?.trim()) undescribed.push(`${where}.${name}`);
        walk(`${where}.${name}`, prop);
      }
      walk(`${where}[]`, schema.items);
      for (const alt of schema.anyOf ?? []) walk(where, alt);
    };
    for (const t of tools) walk(t.name, t.inputSchema as Schema);
    expect(undescribed).toEqual([]);
  });

  it("authenticates like REST: no key or an unknown key is a 401 and no tool runs", async () => {
    const anon = await fetch(`${stack.apiUrl}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(anon.status).toBe(401);
    expect(await anon.json()).toEqual({ error: expect.stringMatching(/Authorization header/) });
    await expect(connect("svc_unknownunknownunknown")).rejects.toThrow(/401|Invalid or revoked API key/);
  });

  it("counts MCP calls against the key's REST rate limit", async () => {
    const post = () =>
      fetch(`${stack.apiUrl}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${a.key}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
    const first = await post();
    expect(first.status).toBe(200);
    const remaining = Number(first.headers.get("ratelimit-remaining"));
    expect(remaining).toBeGreaterThan(0);
    await a.api("GET", "/api/v1/domains");
    expect(Number((await post()).headers.get("ratelimit-remaining"))).toBeLessThan(remaining - 1);
  });

  it("create_inbox: a store-only inbox is the REST address object", async () => {
    const addr = await ok(mcpA, "create_inbox", { domainId: ids.domain, localPart: "Notes" });
    expect(addr).toMatchObject({ domainId: ids.domain, localPart: "notes", endpointId: null, active: true });
    expect(addr.id).toMatch(/^addr_/);
    expect(addr).toEqual(await rest(a, `/addresses/${addr.id}`));
    ids.storeOnly = addr.id;
  });

  it("create_inbox with a new endpoint: routes the inbox to it and returns its secret once", async () => {
    const addr = await ok(mcpA, "create_inbox", {
      domainId: ids.domain,
      localPart: "support",
      endpoint: { name: "receiver", url: `${receiver.url}/hook`, timeoutSeconds: 5 },
    });
    expect(addr.endpoint).toMatchObject({ name: "receiver", url: `${receiver.url}/hook`, timeoutSeconds: 5 });
    expect(addr.endpoint.secret).toMatch(/^whsec_/);
    expect(addr.endpointId).toBe(addr.endpoint.id);
    const { endpoint, ...address } = addr;
    expect(address).toEqual(await rest(a, `/addresses/${addr.id}`));
    const { secret: _secret, ...withoutSecret } = endpoint;
    expect(withoutSecret).toEqual(await rest(a, `/endpoints/${endpoint.id}`));
    ids.address = addr.id;
    ids.endpoint = endpoint.id;
  });

  it("list_/get_ domains, inboxes and endpoints return what REST returns", async () => {
    expect(await ok(mcpA, "list_domains")).toEqual(await rest(a, "/domains"));
    expect(await ok(mcpA, "list_domains", { status: "verified", limit: 1 })).toEqual(
      await rest(a, "/domains?status=verified&limit=1"),
    );
    expect(await ok(mcpA, "get_domain", { id: ids.domain })).toEqual(await rest(a, `/domains/${ids.domain}`));
    const inboxes = await ok(mcpA, "list_inboxes", { domainId: ids.domain, limit: 1 });
    expect(inboxes).toEqual(await rest(a, `/addresses?domainId=${ids.domain}&limit=1`));
    expect(inboxes.data).toHaveLength(1);
    expect(inboxes.nextCursor).toEqual(expect.any(String));
    const page2 = await ok(mcpA, "list_inboxes", { domainId: ids.domain, limit: 1, cursor: inboxes.nextCursor });
    expect(page2.data.map((x: { id: string }) => x.id)).toEqual([ids.storeOnly]);
    expect(await ok(mcpA, "get_inbox", { id: ids.address })).toEqual(await rest(a, `/addresses/${ids.address}`));
    expect(await ok(mcpA, "list_endpoints")).toEqual(await rest(a, "/endpoints"));
    expect(await ok(mcpA, "get_endpoint", { id: ids.endpoint })).toEqual(await rest(a, `/endpoints/${ids.endpoint}`));
  });

  it("emails, threads and deliveries of a real message: the same objects as REST, filters included", async () => {
    await send("support@mcp-example.com", "Invoice 42");
    const delivery = await waitFor(
      () => stack.prisma.delivery.findFirst({ where: { endpointId: ids.endpoint, status: "delivered" } }),
      { what: "a delivered delivery" },
    );
    ids.email = delivery.emailId;
    ids.delivery = delivery.id;

    const emails = await ok(mcpA, "list_emails", { addressId: ids.address, q: "invoice" });
    expect(emails).toEqual(await rest(a, `/emails?addressId=${ids.address}&q=invoice`));
    expect(emails.data.map((e: { id: string }) => e.id)).toEqual([ids.email]);
    expect(await ok(mcpA, "list_emails", { q: "nothing-like-this" })).toEqual({ data: [], nextCursor: null });
    const email = await ok(mcpA, "get_email", { id: ids.email });
    expect(email).toEqual(await rest(a, `/emails/${ids.email}`));
    expect(email).toMatchObject({ subject: "Invoice 42", fromAddress: "alice@sender.example" });
    ids.thread = email.threadId;

    expect(await ok(mcpA, "list_threads")).toEqual(await rest(a, "/threads"));
    const thread = await ok(mcpA, "get_thread", { id: ids.thread });
    expect(thread).toEqual(await rest(a, `/threads/${ids.thread}`));
    expect(thread.data.map((e: { id: string }) => e.id)).toEqual([ids.email]);

    const deliveries = await ok(mcpA, "list_deliveries", { status: "delivered", endpointId: ids.endpoint });
    expect(deliveries).toEqual(await rest(a, `/deliveries?status=delivered&endpointId=${ids.endpoint}`));
    expect(deliveries.data.map((d: { id: string }) => d.id)).toEqual([ids.delivery]);
    const got = await ok(mcpA, "get_delivery", { id: ids.delivery });
    expect(got).toEqual(await rest(a, `/deliveries/${ids.delivery}`));
    expect(got.attempts).toHaveLength(1);
  });

  it("shield rules: create, list, get; a blocked message shows in list_blocks; delete", async () => {
    const rule = await ok(mcpA, "create_shield_rule", {
      name: "Drop spam offers",
      action: "block",
      addressId: ids.address,
      conditions: [{ field: "subject", operator: "contains", value: "OFFER" }],
    });
    expect(rule).toMatchObject({ action: "block", priority: 1, enabled: true, addressId: ids.address });
    expect(rule.id).toMatch(/^gr_/);
    expect(rule).toEqual(await rest(a, `/shield-rules/${rule.id}`));
    expect(await ok(mcpA, "list_shield_rules")).toEqual(await rest(a, "/shield-rules"));
    expect(await ok(mcpA, "get_shield_rule", { id: rule.id })).toEqual(rule);
    ids.rule = rule.id;

    await send("support@mcp-example.com", "Special offer inside");
    await waitFor(() => stack.prisma.blockRecord.findFirst({ where: { ruleId: rule.id } }), { what: "a block record" });
    const blocks = await ok(mcpA, "list_blocks", { ruleId: rule.id, limit: 10 });
    expect(blocks).toEqual(await rest(a, `/blocks?ruleId=${rule.id}&limit=10`));
    expect(blocks.data).toEqual([
      expect.objectContaining({
        ruleId: rule.id,
        ruleName: "Drop spam offers",
        sender: "alice@sender.example",
        recipient: "support@mcp-example.com",
        subject: "Special offer inside",
      }),
    ]);

    const block = blocks.data[0];
    ids.block = block.id;
    expect(await ok(mcpA, "get_block", { id: block.id })).toEqual(block);
    expect(await rest(a, `/blocks/${block.id}`)).toEqual(block);
    expect((await b.api("GET", `/api/v1/blocks/${block.id}`)).status).toBe(404);

    const extra = await ok(mcpA, "create_shield_rule", {
      name: "Temporary",
      action: "route",
      endpointIds: [],
      conditions: [{ field: "has_attachment", operator: "is_true" }],
    });
    expect(extra.priority).toBe(2);
    expect(await ok(mcpA, "delete_shield_rule", { id: extra.id })).toEqual({ id: extra.id, deleted: true });
    expect((await a.api("GET", `/api/v1/shield-rules/${extra.id}`)).status).toBe(404);
    expect(await fails(mcpA, "delete_shield_rule", { id: extra.id })).toBe("Shield rule not found");
  });

  it("a read-only key: every write tool is refused and performs nothing", async () => {
    const counts = () =>
      Promise.all([
        stack.prisma.address.count({ where: { accountId: a.accountId } }),
        stack.prisma.endpoint.count({ where: { accountId: a.accountId } }),
        stack.prisma.shieldRule.count({ where: { accountId: a.accountId } }),
      ]);
    const before = await counts();
    const refused = /read-only.*full-access key is needed/;
    expect(await fails(mcpRead, "create_inbox", { domainId: ids.domain, localPart: "ro" })).toMatch(refused);
    expect(
      await fails(mcpRead, "create_inbox", {
        domainId: ids.domain,
        localPart: "ro2",
        endpoint: { url: `${receiver.url}/ro` },
      }),
    ).toMatch(refused);
    expect(
      await fails(mcpRead, "create_shield_rule", {
        name: "ro",
        action: "block",
        conditions: [{ field: "from", operator: "contains", value: "x" }],
      }),
    ).toMatch(refused);
    expect(await fails(mcpRead, "delete_shield_rule", { id: ids.rule })).toMatch(refused);
    expect(await counts()).toEqual(before);
    expect((await a.api("GET", `/api/v1/shield-rules/${ids.rule}`)).status).toBe(200);
  });

  it("a read-only key: every read tool works and sees what the full key sees", async () => {
    const args: Record<string, Record<string, unknown>> = {
      get_domain: { id: ids.domain },
      get_inbox: { id: ids.address },
      get_endpoint: { id: ids.endpoint },
      get_email: { id: ids.email },
      get_email_timeline: { id: ids.email },
      get_thread: { id: ids.thread },
      get_shield_rule: { id: ids.rule },
      get_delivery: { id: ids.delivery },
      get_block: { id: ids.block },
      get_endpoint_health: { id: ids.endpoint },
    };
    // The aggregates say when they were read (`to`); everything else must be the same.
    const read = async (c: Client, name: string) => {
      const { to: _readAt, ...rest } = (await ok(c, name, args[name] ?? {})) as Record<string, unknown>;
      return rest;
    };
    for (const name of READ_TOOLS) {
      expect([name, await read(mcpRead, name)]).toEqual([name, await read(mcpA, name)]);
    }
  });

  it("isolation: another account's ids behave as if they did not exist", async () => {
    const notFound: [string, string, string][] = [
      ["get_domain", ids.domain as string, "Domain not found"],
      ["get_inbox", ids.address as string, "Address not found"],
      ["get_endpoint", ids.endpoint as string, "Endpoint not found"],
      ["get_email", ids.email as string, "Email not found"],
      ["get_email_timeline", ids.email as string, "Email not found"],
      ["get_thread", ids.thread as string, "Thread not found"],
      ["get_shield_rule", ids.rule as string, "Shield rule not found"],
      ["get_delivery", ids.delivery as string, "Delivery not found"],
      ["get_block", ids.block as string, "Block record not found"],
      ["get_endpoint_health", ids.endpoint as string, "Endpoint not found"],
      ["delete_shield_rule", ids.rule as string, "Shield rule not found"],
    ];
    for (const [tool, id, message] of notFound)
      expect([tool, await fails(mcpB, tool, { id })]).toEqual([tool, message]);
    for (const tool of READ_TOOLS.filter((t) => t.startsWith("list_"))) {
      expect([tool, (await ok(mcpB, tool)).data]).toEqual([tool, []]);
    }
    expect((await ok(mcpB, "list_emails", { threadId: ids.thread })).data).toEqual([]);
    expect(await fails(mcpB, "create_inbox", { domainId: ids.domain, localPart: "steal" })).toBe(
      `domainId: unknown domain ${ids.domain}`,
    );
    const domB = await b.api("POST", "/api/v1/domains", { domain: "mcp-other.com" });
    expect(
      await fails(mcpB, "create_inbox", { domainId: domB.body.id, localPart: "x", endpointId: ids.endpoint }),
    ).toBe(`endpointId: unknown endpoint ${ids.endpoint}`);
    expect(await stack.prisma.address.count({ where: { accountId: b.accountId } })).toBe(0);
    expect((await a.api("GET", `/api/v1/shield-rules/${ids.rule}`)).status).toBe(200);
  });

  it("invalid arguments are tool errors that name the field and the rule", async () => {
    const missing = await fails(mcpA, "create_inbox", {});
    expect(missing).toMatch(/Input validation error: Invalid arguments for tool create_inbox/);
    expect(missing).toMatch(/domainId/);
    expect(missing).toMatch(/localPart/);
    expect(await fails(mcpA, "create_inbox", { domainId: ids.domain, localPart: "x", color: "red" })).toMatch(
      /Unrecognized key.*color/,
    );
    expect(await fails(mcpA, "create_inbox", { domainId: ids.domain, localPart: "has space" })).toMatch(/^localPart: /);
    expect(await fails(mcpA, "create_inbox", { domainId: ids.domain, localPart: "support" })).toBe(
      "localPart: support@mcp-example.com already exists",
    );
    expect(await fails(mcpA, "list_emails", { limit: 500 })).toMatch(/must be a whole number from 1 to 100.*limit/);
    expect(await fails(mcpA, "list_emails", { receivedAfter: "yesterday" })).toMatch(/ISO 8601.*receivedAfter/);
    expect(await fails(mcpA, "list_emails", { cursor: "not-a-cursor" })).toBe("Invalid cursor");
    expect(await fails(mcpA, "list_blocks", { limit: 0 })).toMatch(/must be a whole number from 1 to 100.*limit/);
    expect(await fails(mcpA, "get_email", { id: 5 })).toMatch(/must be email id.*id/);
    expect(
      await fails(mcpA, "create_shield_rule", {
        name: "x",
        action: "block",
        conditions: [{ field: "subject", operator: "matches", value: "x" }],
      }),
    ).toMatch(/operator/);
    expect(await fails(mcpA, "create_shield_rule", { name: "x", action: "block", conditions: [] })).toMatch(
      /^conditions: /,
    );
    expect(
      await fails(mcpA, "create_shield_rule", {
        name: "x",
        action: "allow",
        domainId: ids.domain,
        addressId: ids.address,
        conditions: [{ field: "from", operator: "contains", value: "x" }],
      }),
    ).toMatch(/domainId|addressId/);
    const before = await stack.prisma.endpoint.count({ where: { accountId: a.accountId } });
    expect(
      await fails(mcpA, "create_inbox", {
        domainId: ids.domain,
        localPart: "both",
        endpointId: ids.endpoint,
        endpoint: { url: `${receiver.url}/both` },
      }),
    ).toBe("endpoint: give either endpointId (an existing endpoint) or endpoint (a new one), not both");
    expect(
      await fails(mcpA, "create_inbox", { domainId: ids.domain, localPart: "ftp", endpoint: { url: "ftp://x" } }),
    ).toMatch(/absolute http or https URL.*endpoint\.url/);
    expect(await stack.prisma.endpoint.count({ where: { accountId: a.accountId } })).toBe(before);
    expect(
      await stack.prisma.address.count({ where: { accountId: a.accountId, localPart: { in: ["both", "ftp"] } } }),
    ).toBe(0);
    expect(await fails(mcpA, "drop_database")).toMatch(/Tool drop_database not found/);
  });

  it("every tool that takes a body refuses what its REST route refuses, with the REST message", async () => {
    // The SDK checks each field's type before `run` and words it "… <message> at <path>"; the rules
    // across fields and the service's own checks come from the tool's `run`. Both must match REST.
    const asRestError = (text: string) => {
      const m = /^MCP error -32602: Input validation error: Invalid arguments for tool \w+: (.*) at (\S+)$/.exec(text);
      return m ? `${(m[2] as string).replace(/\[(\d+)\]/g, ".$1")}: ${m[1]}` : text;
    };
    const from = "support@mcp-example.com";
    const cases: [string, string, Record<string, unknown>, Record<string, unknown>?][] = [
      ["send_email", "/emails", { from, to: "x@y.example", subject: "no body" }],
      ["send_email", "/emails", { from, to: "x@y.example", subject: "s", text: "", html: "" }],
      ["send_email", "/emails", { from, to: "x@y.example", subject: "s", text: "t", attachments: [{}] }],
      ["reply_to_email", "/emails/em_none/reply", { replyAll: true }, { id: "em_none" }],
      ["create_inbox", "/addresses", { domainId: ids.domain, localPart: "has space" }],
      ["create_shield_rule", "/shield-rules", { name: "x", action: "block", conditions: [] }],
      ["retry_deliveries", "/deliveries/retry", { endpointId: "nope" }],
    ];
    for (const [tool, path, body, extra] of cases) {
      const r = await a.api("POST", `/api/v1${path}`, body);
      expect(r.status).toBe(400);
      expect([tool, body, asRestError(await fails(mcpA, tool, { ...extra, ...body }))]).toEqual([
        tool,
        body,
        r.body.error,
      ]);
    }
  });

  it("answers other methods on /mcp with 405 (stateless: no stream, no session)", async () => {
    const r = await fetch(`${stack.apiUrl}/mcp`, { headers: { authorization: `Bearer ${a.key}` } });
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe("POST");
  });
});
