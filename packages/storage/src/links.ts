import { signAttachmentLink } from "./link-signing.ts";
import type { ByteStore } from "./store.ts";

type LinkableAttachment = {
  id?: string;
  /** Bytes in the row, not the object store (stored before BYTE_STORE=s3): the API serves them. */
  inRow?: boolean;
  index: number;
  filename: string;
  contentType: string;
  stored: boolean;
};

/** Download links by attachment index, for the attachments of one email that have bytes. */
export type AttachmentLinks = (
  emailId: string,
  attachments: readonly LinkableAttachment[],
) => Promise<ReadonlyMap<number, string>>;

/**
 * The webhook payload's attachment links: URLs that work without an API key for `ttlSeconds`.
 * The object store presigns its own; a backend without (Postgres) gets a link the API serves and
 * checks (link-signing.ts) when `api` (SIGNED_URL_SECRET) is given, and otherwise none: the payload
 * then keeps the API's link, which needs a key.
 */
export function attachmentLinks(
  store: ByteStore,
  ttlSeconds: number,
  api?: { publicApiUrl: string; secret: string },
  now: () => Date = () => new Date(),
): AttachmentLinks {
  return async (emailId, attachments) => {
    const links = new Map<number, string>();
    const expiresAt = new Date(now().getTime() + ttlSeconds * 1000);
    for (const a of attachments) {
      if (!a.stored || !a.id) continue;
      const presigned = a.inRow ? null : await store.presignAttachment({ ...a, id: a.id, emailId }, ttlSeconds);
      const url = presigned ?? (api ? signAttachmentLink(api, emailId, a.index, expiresAt) : null);
      if (url) links.set(a.index, url);
    }
    return links;
  };
}
