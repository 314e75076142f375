import type { RedisOptions } from "ioredis";
import type { QueueKey } from "./catalog.ts";
import { createQueue, type TypedQueue } from "./queues.ts";
import { checkEvictionPolicy, createRedis, type RedisClient, type RedisRole } from "./redis.ts";

/** What a service logs through (pino's Logger fits); kept structural so this package needs no logger. */
export type WarnLogger = { warn(obj: object, msg?: string): void };

export type RedisConnectionsOptions = {
  url: string;
  prefix: string;
  logger: WarnLogger;
  /**
   * Where connection and queue errors go; default: one `warn` line each. `source` says which
   * ("redis worker", "queue inbound"). A service with a rate-limited dependency-error log passes it here.
   */
  onError?: (err: Error, source: string) => void;
};

export type RedisConnections = {
  /** REDIS_PREFIX: what every queue's keys start with (a cluster adds each queue's hash tag). */
  readonly prefix: string;
  /** A connection with the role's options (see createRedis) and an error listener from the start. */
  connect(role: RedisRole, extra?: RedisOptions): RedisClient;
  /** A catalog queue on `connection`, whose own errors are reported like the connections'. */
  queue<K extends QueueKey>(key: K, connection: RedisClient): TypedQueue<K>;
};

/**
 * Every Redis connection and queue of a service process, made in one place so none is left without
 * an error listener (ioredis prints raw stack traces for an unheard "error", BullMQ console.errors
 * it) and the eviction policy is checked in every service: once, when the first connection is ready.
 */
export function createRedisConnections(opts: RedisConnectionsOptions): RedisConnections {
  const report = opts.onError ?? ((err, source) => opts.logger.warn({ err: err.message, source }, "redis error"));
  // BullMQ re-emits its connection's errors on the queue: the same Error object, reported once.
  const reported = new WeakSet<Error>();
  let evictionChecked = false;
  return {
    prefix: opts.prefix,
    connect(role, extra = {}) {
      const redis = createRedis(opts.url, role, extra);
      // ioredis connects on a later tick, so nothing can be emitted before this listener exists.
      redis.on("error", (err: Error) => {
        reported.add(err);
        report(err, `redis ${role}`);
      });
      if (!evictionChecked) {
        evictionChecked = true;
        redis.once("ready", () => {
          void checkEvictionPolicy(redis).then((warning) => warning && opts.logger.warn({}, warning));
        });
      }
      return redis;
    },
    queue(key, connection) {
      const queue = createQueue(key, { connection, prefix: opts.prefix });
      queue.on("error", (err: Error) => {
        if (!reported.has(err)) report(err, `queue ${key}`);
      });
      return queue;
    },
  };
}
