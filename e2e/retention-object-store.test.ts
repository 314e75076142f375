import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { type PrismaClient, poolOf } from "@mailroom/db";
import { purgeExpired } from "@mailroom/retention";
import { fixtures } from "@mailroom/retention/testing";
import type { ByteStore } from "@mailroom/storage";
import { type S3Fixture, startS3Fixture } from "@mailroom/storage/testing";

/**
 * Retention with the bytes in an object store (BYTE_STORE=s3, against s3rver over HTTP on
 * loopback): the pass deletes the expired messages' raw MIME and attachment objects with their rows
 * and leaves every other object alone. The pass runs at an injected "now".
 */
const NOW = new Date("2026-06-01T12:00:00.000Z");
let fx: S3Fixture;
let prisma: PrismaClient;
let store: ByteStore;

beforeAll(async () => {
  fx = await startS3Fixture();
  ({ prisma, store } = fx);
}, 120_000);

afterAll(() => fx?.close());

it("deletes exactly the expired raw MIME and attachment objects", async () => {
  const f = fixtures(prisma, NOW);
  const a = await f.account(30);
  const forever = await f.account(null);

  /** A message whose raw MIME and one attachment live in the object store, as the rule engine leaves them. */
  const inStore = async (account: { id: string; endpointId: string }, days: number, tag: string) => {
    const raw = Buffer.from(`raw of ${tag}\r\n`.repeat(1000));
    const att = Buffer.from(`attachment of ${tag}`.repeat(1000));
    const spoolId = await f.spool(raw, days);
    const e = await f.email({ account, days, spoolId, attachment: Buffer.alloc(0) });
    await prisma.attachment.update({ where: { id: String(e.attachmentId) }, data: { content: null, stored: false } });
    await store.writeAttachment(e.id, 0, att);
    await store.archiveRaw(spoolId);
    expect((await prisma.spooledMessage.findUniqueOrThrow({ where: { id: spoolId } })).raw).toBeNull();
    return { ...e, spoolId, raw, att };
  };
  const expired = await inStore(a, 40, "expired");
  const kept = await inStore(a, 29, "kept");
  const ancient = await inStore(forever, 400, "ancient");
  const attachmentOf = (m: typeof expired) => store.readAttachment({ id: String(m.attachmentId), emailId: m.id });
  expect((await attachmentOf(expired))?.equals(expired.att)).toBe(true);
  expect((await store.readRaw(expired.spoolId))?.equals(expired.raw)).toBe(true);

  const stats = await purgeExpired({ pool: poolOf(prisma), now: NOW, batchSize: 10, bytes: store });
  expect(stats).toMatchObject({ emails: 1, attachments: 1, rawMessages: 1 });

  // Gone from the object store itself (the rows are gone too, so only the objects could answer).
  expect(await attachmentOf(expired)).toBeNull();
  expect(await store.readRaw(expired.spoolId)).toBeNull();
  for (const m of [kept, ancient]) {
    expect((await attachmentOf(m))?.equals(m.att)).toBe(true);
    expect((await store.readRaw(m.spoolId))?.equals(m.raw)).toBe(true);
  }
});
