import type { RedisClient } from "./redis.ts";

/**
 * Live events (issue 18): what happened to an account's mail, for `GET /api/v1/events` and the MCP
 * `wait_for_email` tool. Each event goes to two places in one MULTI:
 * - a Redis stream per account (`<prefix>:events:<accountId>`), trimmed to the last
 *   EVENT_RETENTION_MS, so a reconnecting client resumes from its Last-Event-ID (the entry id);
 * - one pub/sub channel (`<prefix>:events`), so every API replica learns of it at once and wakes its
 *   own waiters and streams for that account, without polling Postgres or holding a blocking Redis
 *   connection per client.
 * Payloads carry ids only (plus the account, for routing); readers load the rows from Postgres.
 */
export const EVENT_TYPES = [
  "email.received",
  "delivery.succeeded",
  "delivery.dead",
  "endpoint.failing",
  "endpoint.recovered",
  "endpoint.disabled",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Endpoint events (webhook dispatcher): `endpoint.failing` when an endpoint's circuit opens (its
 * deliveries then wait for probe attempts; `failingSince` as on the Endpoint object),
 * `endpoint.recovered` when a delivery to it succeeds again, `endpoint.disabled` when it was failing
 * for so long that the dispatcher turned it off (active false; its deliveries wait).
 */
export type EndpointEvent =
  | { type: "endpoint.failing"; accountId: string; endpointId: string; failingSince: string }
  | { type: "endpoint.recovered" | "endpoint.disabled"; accountId: string; endpointId: string };

export type MailEvent =
  | { type: "email.received"; accountId: string; emailId: string }
  | { type: "delivery.succeeded" | "delivery.dead"; accountId: string; deliveryId: string; emailId: string }
  | EndpointEvent;

/** What the stream entry and the pub/sub message carry: the event and when it was published. */
export type PublishedEvent = MailEvent & { occurredAt: string };

/** Kept twice the hour the API promises, so a client an hour behind always finds its place. */
export const EVENT_RETENTION_MS = 2 * 3600 * 1000;
/** A publish never holds up the mail path longer than this; the event is then best effort. */
const PUBLISH_TIMEOUT_MS = 2_000;

export const eventChannel = (prefix: string) => `${prefix}:events`;
export const eventStreamKey = (prefix: string, accountId: string) => `${prefix}:events:${accountId}`;

export type EventPublisher = (event: MailEvent) => Promise<void>;

/** The `onError` every service gives its publisher: one warn line naming the event that was lost. */
export const logPublishFailure =
  (logger: { warn(obj: object, msg: string): void }) =>
  (err: Error, event: MailEvent): void =>
    logger.warn({ err: err.message, type: event.type, accountId: event.accountId }, "event publish failed");

/**
 * A publisher on `redis`. Failures (Redis away) are logged by the caller's `onError` and swallowed:
 * the mail itself is already committed in Postgres, and an event is a notification, not the record.
 */
export function createEventPublisher(
  redis: RedisClient,
  prefix: string,
  onError: (err: Error, event: MailEvent) => void,
): EventPublisher {
  return async (event) => {
    const now = Date.now();
    const data = JSON.stringify({ ...event, occurredAt: new Date(now).toISOString() } satisfies PublishedEvent);
    const key = eventStreamKey(prefix, event.accountId);
    const write = redis
      .multi()
      // `~`: trim whole nodes only (cheap); it may keep a little more than the retention, never less.
      .xadd(key, "MINID", "~", String(now - EVENT_RETENTION_MS), "*", "type", event.type, "data", data)
      // An account that stops receiving mail does not keep its stream for ever.
      .pexpire(key, EVENT_RETENTION_MS)
      .publish(eventChannel(prefix), data)
      .exec();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`event publish timed out after ${PUBLISH_TIMEOUT_MS} ms`)),
        PUBLISH_TIMEOUT_MS,
      );
    });
    try {
      const replies = await Promise.race([write, timeout]);
      const failed = replies?.find(([err]) => err)?.[0];
      if (failed) throw failed;
    } catch (err) {
      onError(err as Error, event);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Parses a pub/sub message or stream entry's `data`; null for anything that is not one of ours. */
export function parsePublishedEvent(text: string): PublishedEvent | null {
  try {
    const v = JSON.parse(text) as Partial<PublishedEvent> & { emailId?: unknown; endpointId?: unknown };
    if (typeof v.accountId !== "string" || !EVENT_TYPES.includes(v.type as EventType)) return null;
    const about = v.type?.startsWith("endpoint.") ? v.endpointId : v.emailId;
    if (typeof about !== "string") return null;
    return v as PublishedEvent;
  } catch {
    return null;
  }
}
