import {
  DeleteObjectsCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  S3Client,
  type S3ServiceException,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { type Queryable, readBytea } from "@mailroom/db";
import type { S3Settings } from "./config.ts";
import { ATTACHMENT_COLUMN, RAW_COLUMN } from "./postgres.ts";
import type { ByteRef, ByteStore, ReadOptions } from "./store.ts";

/** Object keys. Ids are generated (`[0-9A-Za-z_]`), never input, so they are safe in a key. */
export const rawKey = (spoolId: string) => `raw/${spoolId}`;
export const attachmentKey = (emailId: string, attachmentId: string) => `attachments/${emailId}/${attachmentId}`;
const keyOf = (ref: ByteRef) =>
  ref.kind === "raw" ? rawKey(ref.spoolId) : attachmentKey(ref.emailId, ref.attachmentId);

// Messages up to 8 MB go up in one PUT; bigger ones in 8 MB parts, two at a time (lib-storage slices
// the Buffer it is given, so a 35 MB message is not copied again).
const PART_SIZE = 8 * 1024 * 1024;
const DELETE_BATCH = 1000; // DeleteObjects' maximum

/** No recipient of the spool still needs its row's bytes, and an email refers to it. */
const SPOOL_DONE = `NOT EXISTS (SELECT 1 FROM spool_recipients r WHERE r."spoolId" = s.id AND r.status IN ('pending', 'storing'))
   AND EXISTS (SELECT 1 FROM emails e WHERE e."spoolId" = s.id)`;

export function s3Client(s: S3Settings): S3Client {
  return new S3Client({
    region: s.region,
    ...(s.endpoint ? { endpoint: s.endpoint } : {}),
    forcePathStyle: s.forcePathStyle,
    credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey },
    // The SDK's default CRC checksums on every request are not implemented by every S3-compatible
    // store; only send them where the operation requires one.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

const isMissing = (err: unknown) => {
  const e = err as S3ServiceException;
  return e?.name === "NoSuchKey" || e?.$metadata?.httpStatusCode === 404;
};

/** RFC 6266 / 5987: the name as given, safe in a header whatever characters it has. */
function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/** The bucket's objects by key: what the byte store does with S3, without the rows. */
type BucketObjects = {
  put(Key: string, body: Uint8Array): Promise<void>;
  get(Key: string, opts?: ReadOptions): Promise<Buffer | null>;
  remove(refs: readonly ByteRef[]): Promise<void>;
};

function bucketObjects(client: S3Client, Bucket: string): BucketObjects {
  return {
    async put(Key, body) {
      const Body = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      await new Upload({ client, params: { Bucket, Key, Body }, partSize: PART_SIZE, queueSize: 2 }).done();
    },

    /** The object in one buffer of its announced size, filled chunk by chunk as it arrives. */
    async get(Key, opts = {}) {
      let res: GetObjectCommandOutput;
      try {
        res = await client.send(new GetObjectCommand({ Bucket, Key }));
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      }
      const size = res.ContentLength ?? 0;
      const out = opts.shared ? Buffer.from(new SharedArrayBuffer(size)) : Buffer.allocUnsafe(size);
      let offset = 0;
      for await (const chunk of res.Body as AsyncIterable<Uint8Array>) {
        if (offset + chunk.byteLength > size) throw new Error(`object ${Key} is longer than its Content-Length`);
        out.set(chunk, offset);
        offset += chunk.byteLength;
      }
      if (offset !== size) throw new Error(`object ${Key} ended after ${offset} of ${size} bytes`);
      return out;
    },

    async remove(refs) {
      for (let i = 0; i < refs.length; i += DELETE_BATCH) {
        const Objects = refs.slice(i, i + DELETE_BATCH).map((r) => ({ Key: keyOf(r) }));
        const res = await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects, Quiet: true } }));
        const failed = (res.Errors ?? []).filter((e) => e.Code !== "NoSuchKey");
        if (failed.length) {
          throw new Error(`could not delete ${failed.length} objects: ${failed[0]?.Key} ${failed[0]?.Code}`);
        }
      }
    },
  };
}

/**
 * Moves a spool row's bytes to its object once no recipient needs them in the row: put the object,
 * then empty the row only if it is still due (the same condition, so a recipient that went back to
 * pending meanwhile keeps its bytes).
 */
async function archiveRaw(db: Queryable, objects: BucketObjects, spoolId: string): Promise<void> {
  const due = await db.query<{ id: string }>(
    `SELECT s.id FROM spooled_messages s WHERE s.id = $1 AND s.raw IS NOT NULL AND ${SPOOL_DONE}`,
    [spoolId],
  );
  if (!due.rows.length) return;
  const raw = await readBytea(db, RAW_COLUMN, spoolId);
  if (!raw) return;
  await objects.put(rawKey(spoolId), raw);
  const emptied = await db.query(
    `UPDATE spooled_messages s SET raw = NULL WHERE s.id = $1 AND s.raw IS NOT NULL AND ${SPOOL_DONE}`,
    [spoolId],
  );
  if (emptied.rowCount) return;
  // Nothing emptied: archived concurrently (the object is the same bytes), or the row went
  // meanwhile (retention, a purge): then the object just written belongs to nothing.
  const gone = await db.query(`SELECT 1 FROM spooled_messages WHERE id = $1`, [spoolId]);
  if (!gone.rows.length) await objects.remove([{ kind: "raw", spoolId }]);
}

/**
 * Bytes in an S3-compatible object store; the rows keep their metadata in Postgres. Writes put the
 * object first and only then commit the row change that points at it, so a crash in between
 * leaves at worst an object no row refers to (a repeated write overwrites it, the retention pass
 * deletes it with its rows), never a row without its bytes.
 */
export function s3ByteStore(db: Queryable, settings: S3Settings): ByteStore {
  const client = s3Client(settings);
  const Bucket = settings.bucket;
  const objects = bucketObjects(client, Bucket);

  return {
    backend: "s3",

    async readRaw(spoolId, opts) {
      // While recipients are processed (and for mail stored before BYTE_STORE=s3) the spool row
      // holds the bytes; afterwards the object does.
      const held = await readBytea(db, RAW_COLUMN, spoolId, opts).catch((err: unknown) => {
        // Emptied between two slices: archived meanwhile, so the object has it. Anything else
        // (Postgres unreachable) must not read as "no raw message".
        if ((err as Error).message?.includes("changed while it was being read")) return null;
        throw err;
      });
      return held ?? objects.get(rawKey(spoolId), opts);
    },

    archiveRaw: (spoolId) => archiveRaw(db, objects, spoolId),

    async writeAttachment(emailId, index, content) {
      const row = await db.query<{ id: string }>(`SELECT id FROM attachments WHERE "emailId" = $1 AND index = $2`, [
        emailId,
        index,
      ]);
      const id = row.rows[0]?.id;
      if (!id) return; // the email was deleted meanwhile
      await objects.put(attachmentKey(emailId, id), content);
      await db.query(`UPDATE attachments SET stored = true WHERE id = $1`, [id]);
    },

    async readAttachment(ref) {
      // Attachments stored before BYTE_STORE=s3 still have their bytes in the row.
      return (await readBytea(db, ATTACHMENT_COLUMN, ref.id)) ?? objects.get(attachmentKey(ref.emailId, ref.id));
    },

    presignAttachment(ref, ttlSeconds) {
      const command = new GetObjectCommand({
        Bucket,
        Key: attachmentKey(ref.emailId, ref.id),
        ResponseContentType: ref.contentType,
        ResponseContentDisposition: contentDisposition(ref.filename),
      });
      return getSignedUrl(client, command, { expiresIn: ttlSeconds });
    },

    delete: (refs) => objects.remove(refs),

    close: () => client.destroy(),
  };
}
