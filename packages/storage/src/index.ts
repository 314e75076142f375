import type { Queryable } from "@mailroom/db";
import type { ByteStoreConfig } from "./config.ts";
import { postgresByteStore } from "./postgres.ts";
import { s3ByteStore } from "./s3.ts";
import type { ByteStore } from "./store.ts";

export type { ByteStoreConfig, S3Settings } from "./config.ts";
export { byteStoreConfig, byteStoreEnv, requireS3Settings } from "./config.ts";
export { checkAttachmentLink, SIGNED_LINK_PATH, signAttachmentLink } from "./link-signing.ts";
export { type AttachmentLinks, attachmentLinks } from "./links.ts";
export { postgresByteStore } from "./postgres.ts";
export { attachmentKey, rawKey, s3ByteStore, s3Client } from "./s3.ts";
export type { AttachmentRef, ByteRef, ByteStore, ReadOptions } from "./store.ts";

/** The backend BYTE_STORE chose; `db` is the pool the rows live in (Prisma's: `poolOf(prisma)`). */
export function createByteStore(config: ByteStoreConfig, db: Queryable): ByteStore {
  return config.backend === "s3" ? s3ByteStore(db, config.s3) : postgresByteStore(db);
}
