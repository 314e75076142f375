import type { ByteStore } from "./store.ts";

type LinkableAttachment = { id?: string; index: number; filename: string; contentType: string; stored: boolean };

/** Download links by attachment index, for the attachments of one email that have bytes. */
export type AttachmentLinks = (
  emailId: string,
  attachments: readonly LinkableAttachment[],
) => Promise<ReadonlyMap<number, string>>;

/**
 * The webhook payload's attachment links: URLs signed by the byte store that work without an API
 * key for `ttlSeconds`. A backend without its own links (Postgres) gives none, and the payload
 * keeps the API's link.
 */
export function attachmentLinks(store: ByteStore, ttlSeconds: number): AttachmentLinks {
  return async (emailId, attachments) => {
    const links = new Map<number, string>();
    for (const a of attachments) {
      if (!a.stored || !a.id) continue;
      const url = await store.presignAttachment({ ...a, id: a.id, emailId }, ttlSeconds);
      if (url) links.set(a.index, url);
    }
    return links;
  };
}
