/**
 * Where the bytes of accepted mail live: the raw MIME of a spooled message and each attachment's
 * content. The rows (spooled_messages, attachments) stay in Postgres either way; a backend decides
 * where their bytes are. Every reader and writer goes through this interface, so the rest of the
 * code does not know which backend was chosen (BYTE_STORE).
 */

/** The bytes behind one row (the same shape packages/retention hands to `delete`). */
export type ByteRef =
  /** Raw MIME of one accepted message (`spooled_messages.id`). */
  | { kind: "raw"; spoolId: string }
  /** Bytes of one attachment (`attachments.id`) of `emailId`. */
  | { kind: "attachment"; attachmentId: string; emailId: string };

export type AttachmentRef = { id: string; emailId: string };

export type ReadOptions = {
  /** Into a SharedArrayBuffer, which a worker thread reads without a copy (the rule engine's parser). */
  shared?: boolean;
};

export type ByteStore = {
  readonly backend: "postgres" | "s3";
  /** Raw MIME of a spooled message; null when it is gone. */
  readRaw(spoolId: string, opts?: ReadOptions): Promise<Buffer | null>;
  /**
   * Called when a recipient of the message is done. Once no recipient of the spool is still pending
   * or storing and an email refers to it, the object-store backend copies the raw MIME out of the
   * spool row and then empties the row's column; the Postgres backend keeps it where it is.
   */
  archiveRaw(spoolId: string): Promise<void>;
  /**
   * Makes the bytes of attachment `index` of `emailId` durable, then marks its row `stored`: a row
   * that says stored always has its bytes. Repeating it (a resumed job) rewrites the same bytes.
   */
  writeAttachment(emailId: string, index: number, content: Uint8Array): Promise<void>;
  /** The bytes of a stored attachment; null when there are none. */
  readAttachment(ref: AttachmentRef): Promise<Buffer | null>;
  /**
   * A URL that downloads the attachment without an API key until `ttlSeconds` from now, or null
   * when the backend serves none itself (Postgres: the API serves signed links, link-signing.ts).
   */
  presignAttachment(
    ref: AttachmentRef & { filename: string; contentType: string },
    ttlSeconds: number,
  ): Promise<string | null>;
  /** Deletes the bytes behind `refs`; missing ones are not an error (a retried batch repeats some). */
  delete(refs: readonly ByteRef[]): Promise<void>;
  close(): void;
};
