import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createDkimKey } from "@mailroom/core";
import { createPrisma, newId, type PrismaClient } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { createQueue, createRedis, type Redis, type TypedQueue } from "@mailroom/queues";
import { createTestEnv, type PgProxy, startPgProxy, startRelay, type TestEnv, type TestRelay } from "@mailroom/testing";
import { createRelay, type Relay } from "../src/relay.ts";
import { attemptSend } from "../src/send.ts";

/** A message the relay accepted is recorded as sent even when Postgres is away for a moment. */
describe("outbound: Postgres unreachable between the hand-off and its record", () => {
  let env: TestEnv;
  let prisma: PrismaClient;
  let proxy: PgProxy;
  let proxied: PrismaClient;
  let redis: Redis;
  let queue: TypedQueue<"outbound">;
  let relay: TestRelay;
  let client: Relay;

  beforeAll(async () => {
    env = await createTestEnv();
    prisma = createPrisma(env.databaseUrl, { max: 2 });
    proxy = await startPgProxy(env.databaseUrl);
    proxied = createPrisma(proxy.url, { max: 2 });
    redis = createRedis(env.redisUrl, "worker");
    queue = createQueue("outbound", { connection: redis, prefix: env.redisPrefix });
    relay = await startRelay();
    client = createRelay({ url: relay.url, timeoutMs: 5_000 });
  });
  afterAll(async () => {
    client?.close();
    await relay?.close();
    await queue?.close();
    redis?.disconnect();
    await proxied?.$disconnect().catch(() => undefined);
    await proxy?.close();
    await prisma?.$disconnect();
    await env?.cleanup();
  });

  it("is recorded `sent` once Postgres is back; the relay got it once", async () => {
    const accountId = newId("account");
    await prisma.account.create({ data: { id: accountId, name: "t" } });
    const key = await createDkimKey("sel1");
    const domainId = newId("domain");
    await prisma.domain.create({
      data: {
        id: domainId,
        accountId,
        domain: "out-durable.example",
        status: "verified",
        dkimTokens: [],
        dnsRecords: [],
        dkimSelector: key.selector,
        dkimPrivateKey: key.privateKey,
        dkimPublicKey: key.publicKey,
      },
    });
    const threadId = newId("thread");
    await prisma.thread.create({ data: { id: threadId, accountId, subject: "s", lastMessageAt: new Date() } });
    const emailId = newId("email");
    await prisma.email.create({
      data: {
        id: emailId,
        accountId,
        domainId,
        threadId,
        direction: "outbound",
        messageId: `<${emailId}@out-durable.example>`,
        fromAddress: "support@out-durable.example",
        toAddresses: ["someone@elsewhere.example"],
        ccAddresses: [],
        replyTo: [],
        references: [],
        subject: "s",
        textBody: "hello",
        htmlBody: "",
        spfVerdict: "PASS",
        dkimVerdict: "PASS",
        dmarcVerdict: "PASS",
        contentHash: emailId,
        receivedAt: new Date(),
        sendStatus: "queued",
        sendNextAttemptAt: new Date(),
      },
    });
    // The relay takes the message; Postgres goes away before the sender can say so.
    const faulty: Relay = {
      async send(mail) {
        const r = await client.send(mail);
        proxy.down();
        setTimeout(() => proxy.up(), 1_500);
        return r;
      },
      close: () => undefined,
    };
    const outcome = await attemptSend(
      {
        prisma: proxied,
        queue,
        logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
        relay: faulty,
        backoffUnitMs: 20,
        maxAttempts: 3,
      },
      emailId,
    );
    expect(outcome).toEqual({ outcome: "sent", attempt: 1 });
    const row = await prisma.email.findUniqueOrThrow({ where: { id: emailId } });
    expect(row).toMatchObject({ sendStatus: "sent", sendAttempts: 1, sendNextAttemptAt: null });
    expect(relay.messages).toHaveLength(1);
  }, 30_000);
});
