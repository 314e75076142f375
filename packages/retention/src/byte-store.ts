/**
 * Where the bytes of a message live besides its rows. Today every byte is in Postgres
 * (`spooled_messages.raw`, `attachments.content`), so deleting the rows deletes the bytes and the
 * default store does nothing. An object-store backend (issue 16 item 6) implements `delete` for the
 * same references: the retention pass calls it inside the batch's transaction, after the rows are
 * deleted and before the commit. A failed delete rolls the rows back and the next pass retries the
 * same (still expired) batch, so no object outlives its rows; the worst case, a commit that fails
 * after the objects went, leaves rows of mail that is past retention anyway, deleted next pass.
 */
export type ByteRef =
  /** Raw MIME of one accepted message (`spooled_messages.id`). */
  | { kind: "raw"; spoolId: string }
  /** Bytes of one attachment (`attachments.id`) of `emailId`. */
  | { kind: "attachment"; attachmentId: string; emailId: string };

export type ByteStore = {
  /** Deletes the bytes behind `refs`; missing objects are not an error (a retried batch repeats some). */
  delete(refs: readonly ByteRef[]): Promise<void>;
};

/** Bytes kept in the rows themselves: gone with the rows. */
export const postgresByteStore: ByteStore = { delete: async () => undefined };
