/**
 * The console's only way to the server: same-origin JSON under /console/api. The session cookie
 * travels by itself (HttpOnly); every write carries the CSRF token the session answer gave us.
 */
let csrfToken: string | undefined;

export const setCsrfToken = (token: string | undefined) => {
  csrfToken = token;
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
  /** The field a 400 names (`domain: …` → `domain`, `conditions[0].value: …`), to show the error next to it. */
  get field(): string | undefined {
    return this.status === 400 ? /^([\w.[\]]+): /.exec(this.message)?.[1] : undefined;
  }
}

/** `signal` (useAsync's) aborts a request whose answer is no longer wanted. */
export async function api<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["x-csrf-token"] = csrfToken;
  const res = await fetch(`/console/api${path}`, {
    method,
    headers,
    credentials: "same-origin",
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    ...(signal ? { signal } : {}),
  }).catch((err: unknown) => {
    if (signal?.aborted) throw err;
    throw new ApiError(0, "Could not reach the server; check your connection and try again");
  });
  const text = await res.text();
  const data = text ? (JSON.parse(text) as unknown) : null;
  if (!res.ok) {
    const message = (data as { error?: string } | null)?.error ?? `HTTP ${res.status}`;
    if (res.status === 401 && path !== "/session") window.dispatchEvent(new Event("console:signed-out"));
    throw new ApiError(res.status, message);
  }
  return data as T;
}

export type Session = { email: string; accountId: string; csrfToken: string };

export type Overview = {
  account: {
    id: string;
    name: string;
    plan: string;
    limits: { shieldRules: number | null; monthlyAllotment: number | null };
    usage: { month: string; received: number; remaining: number | null; shieldRules: number };
    /** Days this account's mail is kept; null: forever. */
    retentionDays: number | null;
    /** What new accounts on this installation keep (DEFAULT_RETENTION_DAYS); null: forever. */
    defaultRetentionDays: number | null;
  };
  mailToday: number;
  deliveries: { dead: number; retrying: number };
  counts: { domains: number; endpoints: number; addresses: number };
};

export type Delivery = {
  id: string;
  emailId: string;
  endpointId: string;
  status: "pending" | "retrying" | "delivered" | "dead";
  attemptCount: number;
  maxAttempts: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
};

export type Page<T> = { data: T[]; nextCursor: string | null };

export type ApiKey = {
  id: string;
  name: string | null;
  prefix: string;
  scope: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};

export type DnsRecord = { type: string; name: string; value: string; priority?: number };
export type RecordCheck = DnsRecord & { found: boolean; observed: string[]; error?: string };

export type Domain = {
  id: string;
  domain: string;
  status: "pending" | "verified" | "failed";
  dnsRecords: DnsRecord[];
  catchAll: { enabled: boolean; endpointId: string | null };
  verifiedAt: string | null;
  lastCheckedAt: string | null;
  warning: string | null;
  createdAt: string;
};

export type Endpoint = {
  id: string;
  name: string;
  type: string;
  url: string;
  headers: Record<string, string>;
  timeoutSeconds: number;
  maxAttempts: number;
  active: boolean;
};

export type Attempt = {
  number: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string;
  startedAt: string;
  finishedAt: string;
};

export type Address = {
  id: string;
  domainId: string;
  localPart: string;
  endpointId: string | null;
  active: boolean;
  createdAt: string;
  domain?: string;
  address?: string;
};

export type EmailSummary = {
  id: string;
  direction: "inbound" | "outbound";
  threadId: string;
  fromAddress: string;
  toAddresses: string[];
  subject: string;
  spamVerdict: string | null;
  attachmentCount: number;
  receivedAt: string;
};

export type Email = EmailSummary & {
  messageId: string;
  ccAddresses: string[];
  textBody: string;
  htmlBody: string;
  spfVerdict: string;
  dkimVerdict: string;
  dmarcVerdict: string;
  dmarcOverridden: boolean;
  arcVerdict: string;
  virusVerdict: string;
  virusSignature: string | null;
  verdictReasons: { virus: string | null; arc: string | null; dmarc: string | null };
  headers?: Record<string, unknown>;
  attachments: { filename: string; contentType: string; size: number; stored: boolean }[];
};

export type ShieldCondition = { field: string; operator: string; value?: string };

export type ShieldRule = {
  id: string;
  name: string;
  action: "allow" | "block" | "route";
  priority: number;
  enabled: boolean;
  scope: "account" | "domain" | "address";
  domainId: string | null;
  addressId: string | null;
  conditions: ShieldCondition[];
  endpointIds: string[];
  createdAt: string;
};

export type BlockRecord = {
  id: string;
  ruleId: string | null;
  ruleName: string;
  sender: string;
  recipient: string;
  subject: string;
  receivedAt: string;
};

export type DryRun = {
  decision: "none" | "allow" | "block" | "route";
  outcome: "deliver" | "block" | "route" | "quarantine";
  rule: ShieldRule | null;
  reason: string;
  recipient: { address: string };
  trace: { ruleId: string; name: string; priority: number; matched: boolean; skipped?: string }[];
};

export type Account = Overview["account"] & { createdAt: string };

export type Member = {
  id: string;
  email: string;
  passwordSet: boolean;
  lockedUntil: string | null;
  lastSignInAt: string | null;
  createdAt: string;
  you: boolean;
};

export type Invitation = { id: string; email: string; setPasswordUrl: string; expiresAt: string };

type Verdict = { verdict: string | null; reason: string | null };

export type TimelineAttempt = {
  number: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseExcerpt: string;
  startedAt: string;
  finishedAt: string;
};

/** GET /emails/{id}/events: what happened to one message, in order. */
export type EmailEvent =
  | {
      type: "received";
      at: string;
      mailFrom: string | null;
      recipient: string | null;
      clientIp: string | null;
      helo: string | null;
      tls: { protocol: string; cipher: string } | null;
      sizeBytes: number | null;
    }
  | {
      type: "authenticated";
      at: string;
      spf: Verdict;
      dkim: Verdict;
      dmarc: Verdict & { overriddenByArc: boolean };
      arc: Verdict;
      spam: Verdict;
      virus: Verdict;
    }
  | {
      type: "shield";
      at: string;
      decision: "none" | "allow" | "route";
      action: string | null;
      rule: {
        id: string;
        name: string | null;
        priority: number | null;
        changedSince: boolean;
        deleted: boolean;
        conditions: { field: string; operator: string; value: string | null; matched: boolean }[];
      } | null;
      reason: string;
    }
  | { type: "stored"; at: string; threadId: string; processingTries: number | null }
  | { type: "sent"; at: string; status: string; attempts: number; lastReply: string | null; sentAt: string | null }
  | {
      type: "delivery";
      at: string;
      deliveryId: string;
      endpoint: { id: string; name: string; type: string };
      status: Delivery["status"];
      attemptCount: number;
      maxAttempts: number;
      nextAttemptAt: string | null;
      deliveredAt: string | null;
      attempts: TimelineAttempt[];
    };

export type EmailEvents = { emailId: string; direction: "inbound" | "outbound"; events: EmailEvent[] };

export type MailCounts = { stored: number; blocked: number; processingFailed: number };
export type DeliveryCounts = { succeeded: number; retrying: number; dead: number; pending: number };
export type Latency = { attempts: number; p50Ms: number | null; p95Ms: number | null };

/** GET /stats: buckets oldest first and totals over the window. */
export type Stats = {
  window: "24h" | "30d";
  bucket: "hour" | "day";
  from: string;
  to: string;
  buckets: { start: string; mail: MailCounts; deliveries: DeliveryCounts; latency: Latency }[];
  totals: { mail: MailCounts; deliveries: DeliveryCounts; latency: Latency };
};

export type EndpointFailure = {
  deliveryId: string;
  emailId: string;
  attempt: number;
  at: string;
  statusCode: number | null;
  error: string;
  durationMs: number;
  responseExcerpt: string;
};

/** GET /endpoints/{id}/health: the last 24 hours of one endpoint. */
export type EndpointHealth = {
  endpointId: string;
  from: string;
  attempts: number;
  succeeded: number;
  failed: number;
  successRate: number | null;
  latency: Latency;
  failingSince: string | null;
  backlog: { pending: number; retrying: number; nextAttemptAt: string | null };
  deliveries: DeliveryCounts;
  lastFailures: EndpointFailure[];
  hourly: { start: string; attempts: number; failed: number; p50Ms: number | null; p95Ms: number | null }[];
};
