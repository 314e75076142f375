import type * as C from "@mailroom/client";

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

// Response shapes come from the API's OpenAPI document, as @mailroom/client generates them.
export type {
  Account,
  BlockRecord,
  Delivery,
  DeliveryAttempt as Attempt,
  DeliveryCounts,
  DnsRecord,
  DnsRecordCheck as RecordCheck,
  Domain,
  Email,
  EmailEvents,
  EmailSummary,
  Endpoint,
  EndpointFailure,
  EndpointHealth,
  Latency,
  MailCounts,
  ShieldCondition,
  ShieldDryRunResult as DryRun,
  ShieldRule,
  Stats,
} from "@mailroom/client";

export type Page<T> = { data: T[]; nextCursor: string | null };
/** An address; PATCH answers with its domain and full address as well. */
export type Address = C.Address & Partial<Pick<C.AddressWithDomain, "domain" | "address">>;
/** GET /emails/{id}/events: what happened to one message, in order. */
export type EmailEvent = C.EmailEvents["events"][number];
export type TimelineAttempt = C.EmailEventDelivery["attempts"][number];

export type ApiKey = {
  id: string;
  name: string | null;
  prefix: string;
  scope: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};

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
