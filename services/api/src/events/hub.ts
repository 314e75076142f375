import type { Logger } from "@mailroom/log";
import { dependencyErrors } from "@mailroom/observability";
import {
  duplicateRedis,
  eventChannel,
  eventStreamKey,
  type PublishedEvent,
  parsePublishedEvent,
  type Redis,
} from "@mailroom/queues";

/**
 * A signal to one local listener: an event of its account, `resync` after the replica's Redis
 * subscription was re-established (events published meanwhile were missed: look again once), or
 * `closing` when the API shuts down.
 */
export type HubSignal = { kind: "event"; event: PublishedEvent } | { kind: "resync" } | { kind: "closing" };
export type HubListener = (signal: HubSignal) => void;

export type StreamEntry = { id: string; event: PublishedEvent };

/**
 * One per API replica: a single Redis subscription to the event channel, fanned out in memory to
 * the waiters and SSE streams of this replica by account. A listener only ever receives events of
 * the account it registered for; that is the isolation boundary for live events.
 */
export type EventHub = {
  /**
   * Registers `fn` for `accountId`'s events. Resolves once the replica's subscription is live, so
   * every event published after the promise resolves reaches `fn`. Returns the unregister function.
   */
  listen(accountId: string, fn: HubListener): Promise<() => void>;
  /** The account's stream entries after `afterId` (exclusive; "0" for all kept), oldest first. */
  read(accountId: string, afterId: string, count: number): Promise<StreamEntry[]>;
  /** The id of the account's newest kept entry, or null when its stream is empty. */
  lastId(accountId: string): Promise<string | null>;
  /** Ends every listener with `closing` and drops the subscription (graceful shutdown). */
  close(): Promise<void>;
  /** Waiters and streams of `accountId` on this replica (tests, diagnostics). */
  listenerCount(accountId: string): number;
  /** How often an idle event stream sends a heartbeat comment (and re-checks its key). */
  heartbeatMs: number;
};

export function createEventHub(
  redis: Redis,
  prefix: string,
  logger: Logger,
  opts: { heartbeatMs?: number } = {},
): EventHub {
  const listeners = new Map<string, Set<HubListener>>();
  const channel = eventChannel(prefix);
  // A connection of its own (a subscribed connection can run nothing else), retrying for ever and
  // re-subscribing by itself after a reconnect. No command timeout (ioredis treats 0 as "time out
  // at once"): SUBSCRIBE simply waits in the offline queue until Redis is back.
  const sub = duplicateRedis(redis, {
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    commandTimeout: undefined,
  });
  // Rate-limited with the process's other Redis errors: it reconnects in a loop while Redis is down.
  sub.on("error", (err: Error) => dependencyErrors(logger).report("redis", err, { source: "event subscriber" }));
  let closed = false;
  let subscribed: Promise<void> | undefined;
  let everReady = false;

  const broadcast = (signal: HubSignal, accountId?: string) => {
    const targets = accountId ? [listeners.get(accountId)] : [...listeners.values()];
    for (const set of targets) {
      for (const fn of set ?? []) {
        try {
          fn(signal);
        } catch (err) {
          logger.error({ err }, "event listener failed");
        }
      }
    }
  };

  sub.on("message", (ch: string, text: string) => {
    if (ch !== channel) return;
    const event = parsePublishedEvent(text);
    if (event) broadcast({ kind: "event", event }, event.accountId);
  });
  // ioredis re-subscribes on reconnect; whatever was published while it was away is lost to
  // pub/sub, so every listener looks once at the source of truth (Postgres or the stream).
  sub.on("ready", () => {
    if (everReady && !closed) broadcast({ kind: "resync" });
    everReady = true;
  });

  const subscribe = () => {
    subscribed ??= sub.subscribe(channel).then(
      () => undefined,
      (err: Error) => {
        subscribed = undefined;
        throw err;
      },
    );
    return subscribed;
  };

  const streamKey = (accountId: string) => eventStreamKey(prefix, accountId);
  const toEntry = ([id, fields]: [string, string[]]): StreamEntry | null => {
    const data = fields[fields.indexOf("data") + 1];
    const event = data === undefined ? null : parsePublishedEvent(data);
    return event ? { id, event } : null;
  };

  return {
    heartbeatMs: opts.heartbeatMs ?? 15_000,
    listenerCount: (accountId) => listeners.get(accountId)?.size ?? 0,
    async listen(accountId, fn) {
      if (closed) throw new Error("event hub closed");
      let set = listeners.get(accountId);
      if (!set) {
        set = new Set();
        listeners.set(accountId, set);
      }
      set.add(fn);
      const own = set;
      const off = () => {
        own.delete(fn);
        if (own.size === 0 && listeners.get(accountId) === own) listeners.delete(accountId);
      };
      try {
        await subscribe();
      } catch (err) {
        off();
        throw err;
      }
      return off;
    },
    async read(accountId, afterId, count) {
      const rows = (await redis.xrange(streamKey(accountId), `(${afterId}`, "+", "COUNT", count)) as [
        string,
        string[],
      ][];
      return rows.map(toEntry).filter((e): e is StreamEntry => e !== null);
    },
    async lastId(accountId) {
      const rows = (await redis.xrevrange(streamKey(accountId), "+", "-", "COUNT", 1)) as [string, string[]][];
      return rows[0]?.[0] ?? null;
    },
    async close() {
      if (closed) return;
      closed = true;
      broadcast({ kind: "closing" });
      listeners.clear();
      sub.disconnect();
    },
  };
}
