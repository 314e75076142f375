/**
 * Resource → JSON, exactly the spec's field lists (§2). Shared by the REST API, the MCP tools and
 * the webhook payload so that all three always agree. Inputs are structural, so database rows fit.
 */
import { stripReply } from "./reply-text.ts";

export type DnsRecord = { type: string; name: string; value: string; priority?: number };

export type DomainRow = {
  id: string;
  domain: string;
  status: string;
  dkimTokens: string[];
  dnsRecords: unknown;
  catchAllEnabled: boolean;
  catchAllEndpointId: string | null;
  verifiedAt: Date | null;
  lastCheckedAt: Date | null;
  warning: string | null;
  createdAt: Date;
  /** Outbound DKIM (selector and public key); absent on rows selected without them. */
  dkimSelector?: string | null;
  dkimPublicKey?: string | null;
};

/**
 * The TXT record the operator publishes for outbound DKIM: at the target of the domain's CNAME for
 * the selector (`<selector>.dkim.<DKIM_DOMAIN>`), so the account never touches the key.
 */
function dkimRecord(d: DomainRow): DnsRecord | null {
  if (!d.dkimSelector || !d.dkimPublicKey) return null;
  const cname = (d.dnsRecords as DnsRecord[]).find(
    (r) => r.type === "CNAME" && r.name === `${d.dkimSelector}._domainkey.${d.domain}`,
  );
  return cname ? { type: "TXT", name: cname.value, value: `v=DKIM1; k=rsa; p=${d.dkimPublicKey}` } : null;
}

export function domainView(d: DomainRow) {
  return {
    id: d.id,
    domain: d.domain,
    status: d.status,
    dkimTokens: d.dkimTokens,
    dnsRecords: d.dnsRecords as DnsRecord[],
    catchAll: { enabled: d.catchAllEnabled, endpointId: d.catchAllEndpointId },
    verifiedAt: d.verifiedAt?.toISOString() ?? null,
    lastCheckedAt: d.lastCheckedAt?.toISOString() ?? null,
    warning: d.warning,
    createdAt: d.createdAt.toISOString(),
    dkimSelector: d.dkimSelector ?? null,
    dkimPublicKey: d.dkimPublicKey ?? null,
    dkimRecord: dkimRecord(d),
  };
}

export type AddressRow = {
  id: string;
  domainId: string;
  localPart: string;
  endpointId: string | null;
  active: boolean;
  createdAt: Date;
};

export function addressView(a: AddressRow) {
  return {
    id: a.id,
    domainId: a.domainId,
    localPart: a.localPart,
    endpointId: a.endpointId,
    active: a.active,
    createdAt: a.createdAt.toISOString(),
  };
}

/** The update response adds the domain name and the full address (spec §4 PATCH /addresses). */
export function addressWithDomainView(a: AddressRow, domain: string) {
  return { ...addressView(a), domain, address: `${a.localPart}@${domain}` };
}

export type EndpointRow = {
  id: string;
  name: string;
  type: string;
  url: string;
  headers: unknown;
  timeoutSeconds: number;
  maxAttempts: number;
  active: boolean;
  createdAt: Date;
  /** Set while the endpoint's circuit is open (the start of its run of failures); null when healthy. */
  failingSince: Date | null;
};

/** Never includes the secret: it is shown once, by the create response only. */
export function endpointView(e: EndpointRow) {
  return {
    id: e.id,
    name: e.name,
    type: e.type,
    url: e.url,
    headers: (e.headers ?? {}) as Record<string, string>,
    timeoutSeconds: e.timeoutSeconds,
    maxAttempts: e.maxAttempts,
    active: e.active,
    createdAt: e.createdAt.toISOString(),
    failingSince: e.failingSince?.toISOString() ?? null,
  };
}

export type AttachmentRow = {
  /** `attachments.id`; needed only where links are signed per object (packages/storage). */
  id?: string;
  /** The bytes are in the row (stored before BYTE_STORE=s3, or outbound): no object to presign. */
  inRow?: boolean;
  index: number;
  filename: string;
  contentType: string;
  size: number;
  stored: boolean;
};

export type EmailRow = {
  id: string;
  direction: string;
  threadId: string;
  messageId: string;
  inReplyTo: string | null;
  fromAddress: string;
  toAddresses: string[];
  ccAddresses: string[];
  subject: string;
  textBody: string;
  htmlBody: string;
  spamVerdict: string | null;
  spfVerdict: string;
  dkimVerdict: string;
  dmarcVerdict: string;
  virusVerdict: string;
  virusSignature: string | null;
  arcVerdict: string;
  dmarcOverridden: boolean;
  /** `{ virus, arc, dmarc }` strings as the rule engine stored them (a JSON column: read defensively). */
  verdictReasons?: unknown;
  receivedAt: Date;
  /**
   * The reply without quoted history or signature, as the rule engine stored it; null or absent
   * (mail stored before the column existed, outbound mail) is computed from textBody on read.
   */
  strippedText?: string | null;
  /** Fields whose decoded text had characters Postgres cannot store replaced (absent = none). */
  sanitized?: string[];
  /**
   * Inbound mail received over SMTP: what the spool row (spooled_messages) recorded about the
   * client. Null or absent for outbound mail and for mail that did not come in over SMTP; every
   * reader that shows an inbound email (API, webhook payload) loads it.
   */
  spool?: SpoolOrigin | null;
  /** Outbound only: relay hand-off state (absent or null on inbound mail). */
  sendStatus?: string | null;
  sendAttempts?: number;
  sendLastReply?: string | null;
  sentAt?: Date | null;
};

/** The SMTP client a message came from, as the ingest recorded it on the spool row. */
export type SpoolOrigin = {
  remoteIp: string | null;
  helo: string | null;
  tlsProtocol: string | null;
  tlsCipher: string | null;
};

/** `null` for outbound mail (and inbound mail without a client address); who handed it to us over SMTP. */
function receivedView(e: EmailRow) {
  const s = e.spool;
  if (e.direction !== "inbound" || !s?.remoteIp) return null;
  return {
    clientIp: s.remoteIp,
    helo: s.helo,
    tls: s.tlsProtocol ? { protocol: s.tlsProtocol, cipher: s.tlsCipher ?? "" } : null,
  };
}

/** `null` for inbound mail; for outbound, where the relay hand-off stands. */
function sendView(e: EmailRow) {
  if (e.direction !== "outbound" || !e.sendStatus) return null;
  return {
    status: e.sendStatus,
    attempts: e.sendAttempts ?? 0,
    lastReply: e.sendLastReply ?? null,
    sentAt: e.sentAt?.toISOString() ?? null,
  };
}

const reasonOf = (v: unknown) => (typeof v === "string" ? v : null);

/** Each reason a string or null, whatever the stored JSON holds (older rows: `{}`). */
function reasonsView(stored: unknown) {
  const r = stored && typeof stored === "object" ? (stored as Record<string, unknown>) : {};
  return { virus: reasonOf(r.virus), arc: reasonOf(r.arc), dmarc: reasonOf(r.dmarc) };
}

/**
 * The full Email object. `apiBaseUrl` turns each stored attachment into a download link (the
 * webhook payload's consumers need one; REST clients get the same field). `links` (by attachment
 * index) replaces that link: the dispatcher's signed, expiring URLs that need no API key.
 */
export function emailView(
  e: EmailRow,
  attachments: readonly AttachmentRow[],
  apiBaseUrl: string,
  links?: ReadonlyMap<number, string>,
) {
  return {
    id: e.id,
    direction: e.direction,
    threadId: e.threadId,
    messageId: e.messageId,
    inReplyTo: e.inReplyTo,
    fromAddress: e.fromAddress,
    toAddresses: e.toAddresses,
    ccAddresses: e.ccAddresses,
    subject: e.subject,
    textBody: e.textBody,
    strippedText: e.strippedText ?? stripReply(e.textBody),
    htmlBody: e.htmlBody,
    attachments: [...attachments]
      .sort((a, b) => a.index - b.index)
      .map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        size: a.size,
        stored: a.stored,
        url: a.stored
          ? (links?.get(a.index) ?? `${apiBaseUrl.replace(/\/$/, "")}/api/v1/emails/${e.id}/attachments/${a.index}`)
          : null,
      })),
    spamVerdict: e.spamVerdict,
    spfVerdict: e.spfVerdict,
    dkimVerdict: e.dkimVerdict,
    dmarcVerdict: e.dmarcVerdict,
    dmarcOverridden: e.dmarcOverridden,
    arcVerdict: e.arcVerdict,
    virusVerdict: e.virusVerdict,
    virusSignature: e.virusSignature,
    verdictReasons: reasonsView(e.verdictReasons),
    receivedAt: e.receivedAt.toISOString(),
    sanitized: e.sanitized ?? [],
    received: receivedView(e),
    send: sendView(e),
  };
}

export type EmailView = ReturnType<typeof emailView>;

/** What a list entry shows; the list query selects only these columns. */
export type EmailSummaryRow = Pick<
  EmailRow,
  | "id"
  | "direction"
  | "threadId"
  | "messageId"
  | "fromAddress"
  | "toAddresses"
  | "subject"
  | "spamVerdict"
  | "receivedAt"
>;

export function emailSummaryView(e: EmailSummaryRow, attachmentCount: number) {
  return {
    id: e.id,
    direction: e.direction,
    threadId: e.threadId,
    messageId: e.messageId,
    fromAddress: e.fromAddress,
    toAddresses: e.toAddresses,
    subject: e.subject,
    spamVerdict: e.spamVerdict,
    attachmentCount,
    receivedAt: e.receivedAt.toISOString(),
  };
}
