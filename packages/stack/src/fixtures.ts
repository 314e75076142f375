import { afterAll, beforeAll } from "@jest/globals";
import { newId } from "@mailroom/db";
import { type Receiver, seedEmail, sendMail, startReceiver, waitFor } from "@mailroom/testing";
import { type Stack, type StackOptions, startStack, type TestAccount } from "./stack.ts";

/** Raw HTTP against the stack's API (for bodies and headers the JSON helper does not cover). */
export async function http(
  stack: Stack,
  method: string,
  path: string,
  init: { key?: string; body?: string | Buffer; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: { ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  let body: any = buf.toString("utf8");
  try {
    body = body ? JSON.parse(body) : null;
  } catch {
    /* keep text */
  }
  return { status: res.status, headers: res.headers, body, bytes: buf };
}

/** A domain, endpoint and address owned by `acct`, through the API. */
export async function seedRoutes(acct: TestAccount, domain: string) {
  const dom = await acct.api("POST", "/api/v1/domains", { domain });
  const ep = await acct.api("POST", "/api/v1/endpoints", { url: "http://127.0.0.1:9/hook" });
  const addr = await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "info" });
  if (dom.status !== 201 || ep.status !== 201 || addr.status !== 201) {
    throw new Error(`seedRoutes: ${dom.status} ${ep.status} ${addr.status} ${JSON.stringify([dom.body, ep.body])}`);
  }
  return { domainId: dom.body.id as string, endpointId: ep.body.id as string, addressId: addr.body.id as string };
}

/** The API and none of the mail path: for tests of the REST API alone. */
export const API_ONLY: StackOptions = { services: { ingest: false, ruleEngine: false, dispatcher: false } };

/**
 * Registers the hooks that start a stack and one account before the tests of the enclosing file or
 * describe block (handing both to `use`) and close the stack after them.
 */
export function useStack(opts: StackOptions, use: (stack: Stack, acct: TestAccount) => void): void {
  let stack: Stack | undefined;
  beforeAll(async () => {
    stack = await startStack(opts);
    use(stack, await stack.account());
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });
}

/** A stack, an HTTP receiver for its webhooks and one account: the setup of the mail-path tests. */
export type WebhookFixture = { stack: Stack; receiver: Receiver; acct: TestAccount; close(): Promise<void> };

/** Call it in `beforeAll` (with a long timeout), `close` in `afterAll`. */
export async function startWebhookFixture(opts: StackOptions = {}): Promise<WebhookFixture> {
  const stack = await startStack(opts);
  const receiver = await startReceiver();
  const acct = await stack.account();
  return {
    stack,
    receiver,
    acct,
    async close() {
      await receiver.close();
      await stack.close();
    },
  };
}

/**
 * Mail to `address` delivered to the webhook at `url`: its domain (verified by the admin CLI, no
 * DNS), an endpoint and the address, made through the API.
 */
export async function routeToWebhook(stack: Stack, acct: TestAccount, address: string, url: string) {
  const [localPart, domain] = address.split("@") as [string, string];
  const dom = await acct.api("POST", "/api/v1/domains", { domain });
  if (dom.status !== 201) throw new Error(`routeToWebhook: domain ${dom.status} ${JSON.stringify(dom.body)}`);
  await stack.admin("domains", "verify", "--domain", domain, "--force");
  const ep = await acct.api("POST", "/api/v1/endpoints", { name: "hook", url });
  const addr = await acct.api("POST", "/api/v1/addresses", {
    domainId: dom.body.id,
    localPart,
    endpointId: ep.body.id,
  });
  if (ep.status !== 201 || addr.status !== 201) {
    throw new Error(`routeToWebhook: endpoint ${ep.status}, address ${addr.status} ${JSON.stringify(addr.body)}`);
  }
  return { domainId: dom.body.id as string, endpointId: ep.body.id as string, addressId: addr.body.id as string };
}

/**
 * One message from alice@sender.example to `to` with one attachment, over the stack's SMTP port; the
 * `data.email` of the first request `receiver` gets (the webhook delivery of that message).
 */
export async function mailAttachmentToWebhook(
  stack: Stack,
  receiver: Receiver,
  mail: { to: string; subject: string; attachment: { filename: string; content: Buffer; contentType: string } },
  timeoutMs = 120_000,
): Promise<any> {
  const { to, subject, attachment } = mail;
  await sendMail(stack.smtpPort, {
    from: "alice@sender.example",
    to,
    subject,
    text: "Attached.\n",
    attachments: [attachment],
  });
  const req = await waitFor(async () => receiver.requests[0] ?? null, { timeoutMs });
  return JSON.parse(req.body.toString()).data.email;
}

export type Fixture = Record<string, string>;

/** Everything an account can own, so every `:id` route has a real target. */
export async function seedEverything(stack: Stack, acct: TestAccount, domain: string): Promise<Fixture> {
  const r = await seedRoutes(acct, domain);
  const em = await seedEmail(stack.prisma, acct.accountId, {
    domainId: r.domainId,
    addressId: r.addressId,
    raw: Buffer.from("Subject: hi\r\n\r\nhello\r\n"),
    attachments: [{ filename: "a.txt", contentType: "text/plain", content: Buffer.from("abc") }],
  });
  const ruleId = newId("shieldRule");
  await stack.prisma.shieldRule.create({
    data: {
      id: ruleId,
      accountId: acct.accountId,
      name: "r",
      action: "block",
      priority: 1,
      conditions: [],
      endpointIds: [],
    },
  });
  const deliveryId = await seedDeadDelivery(stack, acct.accountId, em.id, r.endpointId);
  const blockId = newId("block");
  await stack.prisma.blockRecord.create({
    data: {
      id: blockId,
      accountId: acct.accountId,
      ruleId,
      ruleName: "r",
      sender: "a@sender.example",
      recipient: `info@${domain}`,
      subject: "blocked",
      receivedAt: new Date(),
    },
  });
  return { ...r, emailId: em.id, threadId: em.threadId, ruleId, deliveryId, blockId };
}

/** A delivery that died after one attempt (HTTP 500). */
async function seedDeadDelivery(stack: Stack, accountId: string, emailId: string, endpointId: string) {
  const deliveryId = newId("delivery");
  await stack.prisma.delivery.create({
    data: {
      id: deliveryId,
      accountId: accountId,
      emailId,
      endpointId,
      maxAttempts: 5,
      status: "dead",
      attemptCount: 1,
      lastStatusCode: 500,
      lastError: "HTTP 500",
    },
  });
  // One attempt, so nested timestamps (startedAt, finishedAt) are in every delivery response.
  await stack.prisma.deliveryAttempt.create({
    data: {
      id: newId("deliveryAttempt"),
      deliveryId,
      number: 1,
      statusCode: 500,
      durationMs: 12,
      error: "HTTP 500",
      responseBody: "oops",
      startedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 0)),
      finishedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 12)),
    },
  });
  return deliveryId;
}

/** The id a route's `:id` refers to, by its resource segment (`/api/v1/<segment>/:id…`). */
export function targetOf(path: string, f: Fixture): string | undefined {
  const seg = path.replace("/api/v1/", "").split("/")[0];
  return (
    {
      domains: f.domainId,
      addresses: f.addressId,
      endpoints: f.endpointId,
      emails: f.emailId,
      threads: f.threadId,
      "shield-rules": f.ruleId,
      deliveries: f.deliveryId,
      blocks: f.blockId,
    } as Record<string, string | undefined>
  )[seg as string];
}

export const concrete = (path: string, f: Fixture) =>
  path.replace(":id", targetOf(path, f) ?? "x_unknown").replace(":n", "0");
