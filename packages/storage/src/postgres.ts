import { type Queryable, readBytea } from "@mailroom/db";
import type { ByteStore } from "./store.ts";

export const RAW_COLUMN = { table: "spooled_messages", column: "raw" } as const;
export const ATTACHMENT_COLUMN = { table: "attachments", column: "content" } as const;

/** One statement: the bytes and the flag that says they are there, together. */
export async function writeAttachmentRow(db: Queryable, emailId: string, index: number, content: Uint8Array) {
  const buf = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  await db.query(`UPDATE attachments SET content = $1, stored = true WHERE "emailId" = $2 AND index = $3`, [
    buf,
    emailId,
    index,
  ]);
}

/**
 * Today's behaviour: the bytes are columns of their rows (read and written around Prisma, in
 * slices: packages/db/src/blobs.ts), so deleting a row deletes its bytes.
 */
export function postgresByteStore(db: Queryable): ByteStore {
  return {
    backend: "postgres",
    readRaw: (spoolId, opts) => readBytea(db, RAW_COLUMN, spoolId, opts),
    archiveRaw: async () => undefined,
    writeAttachment: (emailId, index, content) => writeAttachmentRow(db, emailId, index, content),
    readAttachment: (ref) => readBytea(db, ATTACHMENT_COLUMN, ref.id),
    presignAttachment: async () => null,
    delete: async () => undefined,
    close: () => undefined,
  };
}
