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

type Listeners = ReturnType<typeof listenerSets>;

/** Listeners by account. One listener that throws is logged and does not keep the signal from the others. */
function listenerSets(logger: Logger) {
  const listeners = new Map<string, Set<HubListener>>();
  return {
    /** Adds `fn` under `accountId`; the returned function removes it (and the account's empty set). */
    add(accountId: string, fn: HubListener): () => void {
      let set = listeners.get(accountId);
      if (!set) {
        set = new Set();
        listeners.set(accountId, set);
      }
      set.add(fn);
      const own = set;
      return () => {
        own.delete(fn);
        if (own.size === 0 && listeners.get(accountId) === own) listeners.delete(accountId);
      };
    },
    /** To the account's listeners, or to every listener when no account is given. */
    broadcast(signal: HubSignal, accountId?: string) {
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
    },
    count: (accountId: string) => listeners.get(accountId)?.size ?? 0,
    clear: () => listeners.clear(),
  };
}

/**
 * The replica's subscription to the event channel, fanning each event out to its account's
 * listeners. `subscribe()` is shared by every caller and retried by the next one after a failure.
 */
function subscription(redis: Redis, channel: string, logger: Logger, listeners: Listeners, closed: () => boolean) {
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
  let subscribed: Promise<void> | undefined;
  let everReady = false;

  sub.on("message", (ch: string, text: string) => {
    if (ch !== channel) return;
    const event = parsePublishedEvent(text);
    if (event) listeners.broadcast({ kind: "event", event }, event.accountId);
  });
  // ioredis re-subscribes on reconnect; whatever was published while it was away is lost to
  // pub/sub, so every listener looks once at the source of truth (Postgres or the stream).
  sub.on("ready", () => {
    if (everReady && !closed()) listeners.broadcast({ kind: "resync" });
    everReady = true;
  });

  return {
    subscribe() {
      subscribed ??= sub.subscribe(channel).then(
        () => undefined,
        (err: Error) => {
          subscribed = undefined;
          throw err;
        },
      );
      return subscribed;
    },
    disconnect: () => sub.disconnect(),
  };
}

const toEntry = ([id, fields]: [string, string[]]): StreamEntry | null => {
  const data = fields[fields.indexOf("data") + 1];
  const event = data === undefined ? null : parsePublishedEvent(data);
  return event ? { id, event } : null;
};

export function createEventHub(
  redis: Redis,
  prefix: string,
  logger: Logger,
  opts: { heartbeatMs?: number } = {},
): EventHub {
  const listeners = listenerSets(logger);
  let closed = false;
  const sub = subscription(redis, eventChannel(prefix), logger, listeners, () => closed);
  const streamKey = (accountId: string) => eventStreamKey(prefix, accountId);

  return {
    heartbeatMs: opts.heartbeatMs ?? 15_000,
    listenerCount: listeners.count,
    async listen(accountId, fn) {
      if (closed) throw new Error("event hub closed");
      const off = listeners.add(accountId, fn);
      try {
        await sub.subscribe();
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
      listeners.broadcast({ kind: "closing" });
      listeners.clear();
      sub.disconnect();
    },
  };
}
