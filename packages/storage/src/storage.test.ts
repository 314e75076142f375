import { randomBytes } from "node:crypto";
import { GetObjectCommand, HeadObjectCommand } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId, type PrismaClient, poolOf } from "@mailroom/db";
import { z } from "zod";
import { byteStoreConfig, byteStoreEnv, requireS3Settings } from "./config.ts";
import { attachmentLinks, createByteStore } from "./index.ts";
import { checkAttachmentLink, signAttachmentLink } from "./link-signing.ts";
import { attachmentKey, rawKey, s3Client } from "./s3.ts";
import type { ByteStore } from "./store.ts";
import { type LocalS3, type S3Fixture, startLocalS3, startS3Fixture } from "./testing.ts";

/**
 * Both backends against real servers: Postgres, and s3rver (an S3-compatible server over HTTP on a
 * loopback port) for the object store. Links are fetched with plain HTTP, no credentials.
 */
let fx: S3Fixture;
let prisma: PrismaClient;
let s3: LocalS3;
let store: ByteStore;

beforeAll(async () => {
  fx = await startS3Fixture();
  ({ prisma, s3, store } = fx);
}, 120_000);

afterAll(() => fx?.close());

/** An inbound email of `spool` (one recipient in `status`) with attachment rows not yet stored. */
async function mail(raw: Buffer, status: "stored" | "storing" | "pending", attachments: number[] = []) {
  const account = await prisma.account.create({ data: { id: newId("account"), name: "bytes" } });
  const spool = await prisma.spooledMessage.create({
    data: { id: newId("spool"), mailFrom: "a@sender.test", size: raw.length, sha256: "x", raw: new Uint8Array(raw) },
  });
  const rcpt = await prisma.spoolRecipient.create({
    data: {
      id: newId("spoolRecipient"),
      spoolId: spool.id,
      accountId: account.id,
      domainId: "dom_none",
      recipient: "to@example.com",
      status,
    },
  });
  const thread = await prisma.thread.create({
    data: { id: newId("thread"), accountId: account.id, subject: "s", lastMessageAt: new Date() },
  });
  const email = await prisma.email.create({
    data: {
      id: newId("email"),
      accountId: account.id,
      threadId: thread.id,
      direction: "inbound",
      messageId: `<${newId("email")}@sender.test>`,
      fromAddress: "a@sender.test",
      subject: "s",
      textBody: "t",
      htmlBody: "",
      spfVerdict: "PASS",
      dkimVerdict: "PASS",
      dmarcVerdict: "PASS",
      contentHash: "h",
      spoolId: spool.id,
      spoolRecipientId: status === "pending" ? null : rcpt.id,
      receivedAt: new Date(),
    },
  });
  const ids: string[] = [];
  for (const [index, size] of attachments.entries()) {
    const a = await prisma.attachment.create({
      data: {
        id: newId("attachment"),
        emailId: email.id,
        index,
        filename: `report ${index} ü.bin`,
        contentType: "application/pdf",
        size,
        stored: false,
      },
    });
    ids.push(a.id);
  }
  return { spoolId: spool.id, rcptId: rcpt.id, emailId: email.id, attachmentIds: ids };
}

const objectExists = async (Key: string) => {
  const client = s3Client(s3.settings);
  try {
    await client.send(new HeadObjectCommand({ Bucket: s3.settings.bucket, Key }));
    return true;
  } catch (err) {
    if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
    throw err;
  } finally {
    client.destroy();
  }
};

describe("S3 backend (s3rver over HTTP)", () => {
  it("stores a 25 MB attachment in the object store (multipart) and serves it byte-identical through a presigned URL", async () => {
    const content = randomBytes(25 * 1024 * 1024);
    const m = await mail(Buffer.from("raw"), "storing", [content.length]);
    const attachmentId = m.attachmentIds[0] as string;

    await store.writeAttachment(m.emailId, 0, content);

    const row = await poolOf(prisma).query<{ stored: boolean; inRow: boolean }>(
      `SELECT stored, content IS NOT NULL AS "inRow" FROM attachments WHERE id = $1`,
      [attachmentId],
    );
    expect(row.rows[0]).toEqual({ stored: true, inRow: false });
    expect(await objectExists(attachmentKey(m.emailId, attachmentId))).toBe(true);

    const read = await store.readAttachment({ id: attachmentId, emailId: m.emailId });
    expect(read?.equals(content)).toBe(true);

    const url = await store.presignAttachment(
      { id: attachmentId, emailId: m.emailId, filename: "report 0 ü.bin", contentType: "application/pdf" },
      3600,
    );
    expect(url).toMatch(/X-Amz-Signature=/);
    const res = await fetch(url as string); // no credentials: the URL is the authorisation
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-disposition")).toContain("filename*=UTF-8''report%200%20%C3%BC.bin");
    expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);
  }, 300_000);

  // s3rver checks a presigned URL's expiry but not its SigV4 signature, so tampering is not tested here.
  it("refuses an expired link", async () => {
    const m = await mail(Buffer.from("raw"), "storing", [5]);
    const attachmentId = m.attachmentIds[0] as string;
    await store.writeAttachment(m.emailId, 0, Buffer.from("hello"));
    const client = s3Client(s3.settings);
    // Signed two hours ago for one minute: expired, without waiting for it.
    const expired = await getSignedUrl(
      client,
      new GetObjectCommand({ Bucket: s3.settings.bucket, Key: attachmentKey(m.emailId, attachmentId) }),
      { expiresIn: 60, signingDate: new Date(Date.now() - 2 * 3600_000) },
    );
    client.destroy();
    expect((await fetch(expired)).status).toBe(403);
    const url = (await store.presignAttachment(
      { id: attachmentId, emailId: m.emailId, filename: "a", contentType: "text/plain" },
      60,
    )) as string;
    expect(await (await fetch(url)).text()).toBe("hello");
  }, 60_000);

  it("moves the raw MIME to the object store once no recipient needs the spool row, and reads it back", async () => {
    const raw = randomBytes(9 * 1024 * 1024 + 17); // over one part: a multipart upload
    const pending = await mail(raw, "pending");
    await store.archiveRaw(pending.spoolId);
    // A recipient still pending reads the row: nothing moves.
    expect(await objectExists(rawKey(pending.spoolId))).toBe(false);

    const done = await mail(raw, "stored");
    await store.archiveRaw(done.spoolId);
    const row = await poolOf(prisma).query<{ raw: Buffer | null }>(`SELECT raw FROM spooled_messages WHERE id = $1`, [
      done.spoolId,
    ]);
    expect(row.rows[0]?.raw).toBeNull();
    expect(await objectExists(rawKey(done.spoolId))).toBe(true);
    const back = await store.readRaw(done.spoolId, { shared: true });
    expect(back?.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(back?.equals(raw)).toBe(true);
    // Archiving twice is harmless.
    await store.archiveRaw(done.spoolId);
    expect((await store.readRaw(done.spoolId))?.equals(raw)).toBe(true);
  }, 120_000);

  it("deletes objects by reference; missing ones are not an error", async () => {
    const m = await mail(Buffer.from("raw bytes"), "stored", [3]);
    await store.writeAttachment(m.emailId, 0, Buffer.from("abc"));
    await store.archiveRaw(m.spoolId);
    const attachmentId = m.attachmentIds[0] as string;
    const refs = [
      { kind: "raw", spoolId: m.spoolId },
      { kind: "attachment", attachmentId, emailId: m.emailId },
      { kind: "attachment", attachmentId: "att_missing", emailId: m.emailId },
    ] as const;
    await store.delete(refs);
    expect(await objectExists(rawKey(m.spoolId))).toBe(false);
    expect(await objectExists(attachmentKey(m.emailId, attachmentId))).toBe(false);
    await store.delete(refs);
  }, 60_000);

  it("still reads bytes written to the rows before BYTE_STORE=s3", async () => {
    const m = await mail(Buffer.from("old raw"), "stored", [3]);
    await createByteStore({ backend: "postgres" }, poolOf(prisma)).writeAttachment(m.emailId, 0, Buffer.from("old"));
    const read = await store.readAttachment({ id: m.attachmentIds[0] as string, emailId: m.emailId });
    expect(read?.toString()).toBe("old");
    expect((await store.readRaw(m.spoolId))?.toString()).toBe("old raw");
  }, 60_000);
});

describe("payload links", () => {
  it("presigns objects, and leaves bytes still in their rows to the API (signed link when a secret is set)", async () => {
    const atts = [
      { id: "att_a", index: 0, filename: "a.pdf", contentType: "application/pdf", stored: true },
      { id: "att_b", inRow: true, index: 1, filename: "b.pdf", contentType: "application/pdf", stored: true },
      { id: "att_c", index: 2, filename: "c.pdf", contentType: "application/pdf", stored: false },
    ];
    const plain = await attachmentLinks(store, 600)("em_x", atts);
    expect([...plain.keys()]).toEqual([0]);
    expect(plain.get(0)).toContain("/attachments/em_x/att_a?");
    const api = { publicApiUrl: "https://api.example", secret: "s".repeat(32) };
    const signed = await attachmentLinks(store, 600, api)("em_x", atts);
    expect(signed.get(1)).toMatch(
      /^https:\/\/api\.example\/files\/emails\/em_x\/attachments\/1\?expires=\d+&signature=/,
    );
    expect(signed.has(2)).toBe(false);
  });
});

describe("S3 backend when the store is unreachable", () => {
  it("leaves no row pointing at bytes that are not there: attachment stays unstored, raw stays in its row", async () => {
    // A store on a port nothing listens on (s3rver started and stopped): every request fails.
    const gone = await startLocalS3();
    await gone.close();
    const down = createByteStore({ backend: "s3", s3: gone.settings }, poolOf(prisma));
    try {
      const raw = Buffer.from("raw kept in the row");
      const m = await mail(raw, "stored", [3]);
      await expect(down.writeAttachment(m.emailId, 0, Buffer.from("abc"))).rejects.toThrow();
      const att = await poolOf(prisma).query(`SELECT stored FROM attachments WHERE id = $1`, [m.attachmentIds[0]]);
      expect(att.rows[0]).toEqual({ stored: false });
      await expect(down.archiveRaw(m.spoolId)).rejects.toThrow();
      // Still readable from the row; the working store then archives it.
      expect((await down.readRaw(m.spoolId))?.equals(raw)).toBe(true);
      await store.archiveRaw(m.spoolId);
      expect((await store.readRaw(m.spoolId))?.equals(raw)).toBe(true);
    } finally {
      down.close();
    }
  }, 120_000);
});

describe("Postgres backend", () => {
  it("keeps the bytes in the rows and has no presigned links", async () => {
    const pgStore = createByteStore({ backend: "postgres" }, poolOf(prisma));
    const m = await mail(Buffer.from("raw"), "stored", [4]);
    await pgStore.writeAttachment(m.emailId, 0, Buffer.from("data"));
    const ref = { id: m.attachmentIds[0] as string, emailId: m.emailId };
    expect((await pgStore.readAttachment(ref))?.toString()).toBe("data");
    await pgStore.archiveRaw(m.spoolId);
    expect((await pgStore.readRaw(m.spoolId))?.toString()).toBe("raw");
    expect(await pgStore.presignAttachment({ ...ref, filename: "a", contentType: "text/plain" }, 60)).toBeNull();
  }, 60_000);
});

describe("settings", () => {
  const schema = z.object(byteStoreEnv).superRefine(requireS3Settings);
  it("defaults to Postgres", () => {
    expect(byteStoreConfig(schema.parse({}))).toEqual({ backend: "postgres" });
  });
  it("refuses s3 without bucket and credentials", () => {
    const r = schema.safeParse({ BYTE_STORE: "s3", S3_BUCKET: "b" });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join("."))).toEqual(["S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"]);
  });
  it("reads a complete s3 configuration", () => {
    const parsed = schema.parse({
      BYTE_STORE: "s3",
      S3_ENDPOINT: "http://127.0.0.1:9000",
      S3_BUCKET: "mail",
      S3_ACCESS_KEY_ID: "k",
      S3_SECRET_ACCESS_KEY: "s",
      S3_FORCE_PATH_STYLE: "true",
      SIGNED_URL_TTL_SECONDS: "600",
    });
    expect(byteStoreConfig(parsed)).toMatchObject({ backend: "s3", s3: { bucket: "mail", forcePathStyle: true } });
    expect(parsed.SIGNED_URL_TTL_SECONDS).toBe(600);
    expect(schema.safeParse({ SIGNED_URL_TTL_SECONDS: "10" }).success).toBe(false);
  });
});

describe("API-served signed links (Postgres)", () => {
  const secret = "s".repeat(32);
  const at = new Date("2026-06-01T12:00:00.000Z");
  const url = new URL(signAttachmentLink({ publicApiUrl: "https://api.example/", secret }, "em_1", 2, at));
  const q = Object.fromEntries(url.searchParams);

  it("names one attachment and expires", () => {
    expect(url.pathname).toBe("/files/emails/em_1/attachments/2");
    expect(checkAttachmentLink(secret, "em_1", 2, q, new Date(at.getTime() - 1000))).toEqual({ ok: true });
    expect(checkAttachmentLink(secret, "em_1", 2, q, at)).toEqual({ ok: false, reason: "expired" });
  });
  it("refuses another email, attachment, expiry or secret", () => {
    const before = new Date(at.getTime() - 1000);
    expect(checkAttachmentLink(secret, "em_2", 2, q, before).ok).toBe(false);
    expect(checkAttachmentLink(secret, "em_1", 1, q, before).ok).toBe(false);
    expect(checkAttachmentLink(secret, "em_1", 2, { ...q, expires: String(Number(q.expires) + 60) }, before).ok).toBe(
      false,
    );
    expect(checkAttachmentLink("t".repeat(32), "em_1", 2, q, before).ok).toBe(false);
    expect(checkAttachmentLink(secret, "em_1", 2, { expires: q.expires }, before)).toEqual({
      ok: false,
      reason: "malformed",
    });
  });
});
