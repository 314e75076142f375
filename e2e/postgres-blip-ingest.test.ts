import { randomBytes } from "node:crypto";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { connectClient, poolOf } from "@mailroom/db";
import {
  connect,
  mimeWithAttachment,
  type SendOutcome,
  seedAddress,
  seedDomain,
  send,
  sendOnce,
  simpleMessage,
  sparePort,
} from "@mailroom/testing";
import { type Blip, blipEnv, loggedPostgresError, unlessExited, waitingForLock, whileAlive } from "./postgres-blip.ts";
import { type ServiceProcess, startService, stopService } from "./service-processes.ts";

/**
 * A dropped Postgres connection must not end smtp-ingest. node-postgres reports a connection that
 * breaks as an 'error' event, and one nobody listens to ends the process: the ingest's pool got a
 * listener only from Prisma's first query (and Prisma runs only for /readyz, which start-all,
 * compose and the image's HEALTHCHECK never ask), and a connection checked out for a transaction
 * (staged DATA, mail for several accounts) had none. Real smtp-ingest processes behind a TCP proxy
 * in front of Postgres, cut in each of those states; /readyz is never asked. Each process must stay
 * up, answer 451 while Postgres is away and 250 once it is back.
 */
const MB = 1024 * 1024;
const FROM = "sender@outside.example";
const TO = "blip@blip-ingest.example";

describe("smtp-ingest with its Postgres connections cut", () => {
  let b: Blip;
  let ingest: ServiceProcess | undefined;
  let port: number;

  beforeAll(async () => {
    b = await blipEnv();
    await seedAddress(b.prisma, await seedDomain(b.prisma, "blip-ingest.example"), "blip");
  });
  afterEach(async () => {
    b.proxy.up();
    if (ingest) await stopService(ingest);
    ingest = undefined;
  });
  afterAll(() => b?.close());

  /** A fresh process on the proxy, up once it greets over SMTP (never through /readyz). */
  const startIngest = async (): Promise<ServiceProcess> => {
    port = await sparePort();
    const p = await startService("smtp-ingest", {
      DATABASE_URL: b.proxy.url,
      REDIS_URL: b.env.redisUrl,
      REDIS_PREFIX: b.env.redisPrefix,
      SMTP_HOST: "127.0.0.1",
      SMTP_PORT: String(port),
      SMTP_GREETING_DELAY_MS: "0",
      LOG_LEVEL: "info",
    });
    ingest = p;
    const greets = () =>
      connect({ port }).then(
        (c) => {
          c.quit();
          return true;
        },
        () => false,
      );
    await whileAlive(p, greets, "smtp-ingest greeting over SMTP", 120_000);
    return p;
  };
  const deliver = (raw: string | Buffer): Promise<SendOutcome> =>
    unlessExited(ingest as ServiceProcess, sendOnce({ port }, { from: FROM, to: [TO] }, raw));
  const small = (subject: string) => simpleMessage(FROM, TO, subject);
  /** ≈ 5 MB on the wire: streamed into spool_chunks in 1 MiB slices, then joined at accept. */
  const big = () =>
    Buffer.from(
      mimeWithAttachment({
        to: TO,
        messageId: `<${randomBytes(8).toString("hex")}@outside.example>`,
        filename: "big.bin",
        contentType: "application/octet-stream",
        content: randomBytes(Math.round(3.75 * MB)),
      }),
    );
  const spooled = () => b.prisma.spooledMessage.count();
  /** Accepted once, whole: its spool row holds it (behind the ingest's Received: header). */
  const acceptedWhole = async (raw: Buffer, before: number) => {
    const r = await deliver(raw);
    expect(r.response).toMatch(/^250 /);
    const id = /queued as (spl_\w+)/.exec(r.response)?.[1] ?? "";
    const row = await b.prisma.spooledMessage.findUniqueOrThrow({ where: { id }, select: { raw: true } });
    expect(
      Buffer.from(row.raw ?? [])
        .subarray(-raw.length)
        .equals(raw),
    ).toBe(true);
    expect(await spooled()).toBe(before + 1);
  };
  const slices = async () => Number((await poolOf(b.prisma).query("SELECT count(*) AS n FROM spool_chunks")).rows[0].n);
  const expect451 = (r: SendOutcome) => expect(`${r.code} ${r.response}`).toMatch(/451 4\.3\.0/);

  it("a fresh ingest that never answered /readyz survives its idle connections dropping: 451 while away, 250 after", async () => {
    const p = await startIngest();
    expect((await deliver(small("before"))).response).toMatch(/^250 /);
    // The RCPT lookup and the accept left their connections idle in the pool: those are cut.
    expect(b.proxy.open()).toBeGreaterThan(0);
    b.proxy.down();
    await whileAlive(
      p,
      async () => loggedPostgresError(p, "idle connection"),
      "the ingest to see its connections drop",
    );

    expect451(await deliver(small("during")));
    b.proxy.up();
    expect((await deliver(small("after"))).response).toMatch(/^250 /);
    await whileAlive(p, async () => true, "the ingest still running");
    expect(await b.prisma.spooledMessage.count()).toBeGreaterThanOrEqual(2);
  }, 180_000);

  it("a staged 5 MB DATA cut while its slices are written: 451, the ingest stays up, the next message is accepted", async () => {
    const p = await startIngest();
    const before = await spooled();
    const raw = big();
    const body = new PassThrough();
    const conn = await connect({ port });
    try {
      const sent = send(conn, { from: FROM, to: [TO] }, body);
      body.write(raw.subarray(0, 2 * MB));
      await whileAlive(p, async () => (await slices()) >= 1, "slices of the unfinished message");
      b.proxy.down();
      body.end(raw.subarray(2 * MB));
      expect451(await unlessExited(p, sent));
    } finally {
      conn.quit();
    }
    expect(await spooled()).toBe(before);
    b.proxy.up();
    await acceptedWhole(big(), before);
    await whileAlive(p, async () => true, "the ingest still running");
  }, 180_000);

  it("a staged 5 MB DATA cut at accept, inside its transaction: 451, the ingest stays up, the next message is accepted", async () => {
    const p = await startIngest();
    const before = await spooled();
    // Holds the accept inside its transaction (its INSERT waits for this lock) on a checked-out connection.
    const holder = await connectClient(b.env.databaseUrl);
    try {
      await holder.query("BEGIN");
      await holder.query("LOCK TABLE spooled_messages IN SHARE MODE");
      const sent = deliver(big());
      await whileAlive(
        p,
        () => waitingForLock(b.prisma, "%INSERT INTO spooled_messages%"),
        "the accept to wait inside its transaction",
        120_000,
      );
      b.proxy.down();
      await holder.query("ROLLBACK");
      expect451(await sent);
    } finally {
      await holder.end();
    }
    expect(await spooled()).toBe(before);
    b.proxy.up();
    await acceptedWhole(big(), before);
    await whileAlive(p, async () => true, "the ingest still running");
  }, 180_000);
});
