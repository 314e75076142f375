import { createHash } from "node:crypto";
import { newId, type PrismaClient } from "@mailroom/db";

/**
 * Rows straight into a test database, as the services would have written them: one family for
 * every test (accounts, domains, addresses, endpoints, emails, deliveries). Each returns the ids a
 * test goes on with; what a test does not say gets a plain default.
 */

/** An account with one domain. */
export type Seeded = { accountId: string; domainId: string; domain: string };

/** An account; returns its id. */
export async function seedAccount(prisma: PrismaClient, opts: { name?: string; plan?: string } = {}): Promise<string> {
  const id = newId("account");
  await prisma.account.create({ data: { id, name: opts.name ?? "test", plan: opts.plan ?? "free" } });
  return id;
}

/** A domain (verified unless told otherwise) of a new account, or of `opts.accountId`. */
export async function seedDomain(
  prisma: PrismaClient,
  domain: string,
  opts: {
    plan?: string;
    status?: string;
    catchAll?: boolean;
    catchAllEndpointId?: string | null;
    accountId?: string;
  } = {},
): Promise<Seeded> {
  const accountId = opts.accountId ?? (await seedAccount(prisma, { name: domain, plan: opts.plan ?? "free" }));
  const domainId = newId("domain");
  await prisma.domain.create({
    data: {
      id: domainId,
      accountId,
      domain,
      status: opts.status ?? "verified",
      dkimTokens: [],
      dnsRecords: [],
      catchAllEnabled: opts.catchAll ?? false,
      catchAllEndpointId: opts.catchAllEndpointId ?? null,
    },
  });
  return { accountId, domainId, domain };
}

/** `localPart@` the domain of `d`; returns the address id. */
export async function seedAddress(
  prisma: PrismaClient,
  d: Seeded,
  localPart: string,
  opts: { active?: boolean; endpointId?: string | null } = {},
): Promise<string> {
  const id = newId("address");
  await prisma.address.create({
    data: {
      id,
      accountId: d.accountId,
      domainId: d.domainId,
      localPart,
      active: opts.active ?? true,
      endpointId: opts.endpointId ?? null,
    },
  });
  return id;
}

export type SeedEndpoint = {
  type?: "webhook" | "slack" | "discord" | "email";
  timeoutSeconds?: number;
  maxAttempts?: number;
  headers?: Record<string, string>;
  active?: boolean;
  /** Default: the same fixed test secret for every endpoint. */
  secret?: string;
  previousSecret?: string | null;
  previousSecretExpiresAt?: Date | null;
};

/** The fixed secret of endpoints seeded without one. */
export const TEST_ENDPOINT_SECRET = "whsec_test_secret_0123456789abcdef";

/** An endpoint of `accountId` posting to `url` (a webhook unless told otherwise); returns its id. */
export async function seedEndpoint(
  prisma: PrismaClient,
  accountId: string,
  url: string,
  opts: SeedEndpoint = {},
): Promise<string> {
  const id = newId("endpoint");
  await prisma.endpoint.create({
    data: {
      id,
      accountId,
      name: "test",
      type: opts.type ?? "webhook",
      url,
      headers: opts.headers ?? {},
      timeoutSeconds: opts.timeoutSeconds ?? 5,
      maxAttempts: opts.maxAttempts ?? 5,
      active: opts.active ?? true,
      secret: opts.secret ?? TEST_ENDPOINT_SECRET,
      previousSecret: opts.previousSecret ?? null,
      previousSecretExpiresAt: opts.previousSecretExpiresAt ?? null,
    },
  });
  return id;
}

export type SeedEmail = {
  threadId?: string;
  subject?: string;
  fromAddress?: string;
  fromName?: string | null;
  textBody?: string;
  direction?: "inbound" | "outbound";
  receivedAt?: Date;
  domainId?: string | null;
  addressId?: string | null;
  /** The envelope recipient this copy was accepted for. */
  recipient?: string | null;
  attachments?: { filename: string; contentType: string; content: Buffer | null }[];
  /** The raw MIME, kept as a spool row the email points at. */
  raw?: Buffer;
};

/** One email (and its thread when new) of `accountId`, as the rule engine stores it. */
export async function seedEmail(prisma: PrismaClient, accountId: string, e: SeedEmail = {}) {
  const receivedAt = e.receivedAt ?? new Date();
  const threadId = e.threadId ?? newId("thread");
  await prisma.thread.upsert({
    where: { id: threadId },
    create: { id: threadId, accountId, subject: e.subject ?? "hello", lastMessageAt: receivedAt },
    update: { lastMessageAt: receivedAt },
  });
  const spoolId = e.raw ? await seedSpool(prisma, e.raw, e.fromAddress) : null;
  const id = newId("email");
  await prisma.email.create({
    data: {
      id,
      accountId,
      threadId,
      domainId: e.domainId ?? null,
      addressId: e.addressId ?? null,
      direction: e.direction ?? "inbound",
      messageId: `<${id}@sender.example>`,
      references: [],
      fromAddress: e.fromAddress ?? "alice@sender.example",
      fromName: e.fromName ?? null,
      toAddresses: [e.recipient ?? "support@example.com"],
      ccAddresses: [],
      replyTo: [],
      subject: e.subject ?? "hello",
      textBody: e.textBody ?? "body text",
      htmlBody: "",
      recipient: e.recipient ?? null,
      spamVerdict: e.direction === "outbound" ? null : "PASS",
      spfVerdict: "PASS",
      dkimVerdict: "PASS",
      dmarcVerdict: "PASS",
      contentHash: id,
      spoolId,
      receivedAt,
      attachments: { create: (e.attachments ?? []).map(attachmentRow) },
    },
  });
  return { id, threadId };
}

function attachmentRow(a: { filename: string; contentType: string; content: Buffer | null }, index: number) {
  return {
    id: newId("attachment"),
    index,
    filename: a.filename,
    contentType: a.contentType,
    size: a.content?.length ?? 0,
    content: a.content ? new Uint8Array(a.content) : null,
    stored: a.content !== null,
  };
}

async function seedSpool(prisma: PrismaClient, raw: Buffer, mailFrom = "alice@sender.example"): Promise<string> {
  const id = newId("spool");
  await prisma.spooledMessage.create({
    data: {
      id,
      mailFrom,
      size: raw.length,
      sha256: createHash("sha256").update(raw).digest("hex"),
      raw: new Uint8Array(raw),
    },
  });
  return id;
}

/**
 * A pending delivery to `endpointId` (its maxAttempts, due now, not queued) of a new email of `d`'s
 * account, or of `opts.emailId`.
 */
export async function seedDelivery(
  prisma: PrismaClient,
  d: { accountId: string; domainId?: string },
  endpointId: string,
  opts: SeedEmail & { emailId?: string } = {},
) {
  const { emailId: given, ...email } = opts;
  const emailId = given ?? (await seedEmail(prisma, d.accountId, { domainId: d.domainId ?? null, ...email })).id;
  const endpoint = await prisma.endpoint.findUniqueOrThrow({ where: { id: endpointId } });
  return prisma.delivery.create({
    data: {
      id: newId("delivery"),
      accountId: d.accountId,
      emailId,
      endpointId,
      maxAttempts: endpoint.maxAttempts,
      nextAttemptAt: new Date(),
    },
  });
}
