import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";

export type RedisRole = "worker" | "producer";

/** A connection to a single Redis or to a Redis Cluster; both speak the same commands. */
export type RedisClient = Redis | Cluster;

/**
 * `REDIS_URL` names a cluster with the scheme `redis+cluster://` (`rediss+cluster://` for TLS):
 * `redis+cluster://[user:password@]host:port[,host:port…]`, any reachable node(s) as seeds; the
 * client discovers the others and follows slot moves and failovers.
 */
export const isClusterUrl = (url: string): boolean => /^rediss?\+cluster:\/\//i.test(url);

/**
 * Redis connections for BullMQ. Workers block on Redis and must retry forever
 * (`maxRetriesPerRequest: null`); producers sit in request paths (SMTP, HTTP) and must fail fast
 * when Redis is gone (`enableOfflineQueue: false`), so the caller can answer 503 (the API) or go on
 * without the wake-up (SMTP: the committed rows are the work; smtp-ingest/src/spool.ts).
 */
export function createRedis(url: string, role: RedisRole, extra: RedisOptions = {}): RedisClient {
  const base: RedisOptions =
    role === "worker"
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000, commandTimeout: 5_000 };
  const options = { ...base, ...extra };
  return isClusterUrl(url) ? createCluster(url, options) : new Redis(url, options);
}

function createCluster(url: string, options: RedisOptions): Cluster {
  const tls = /^rediss/i.test(url);
  // URL cannot hold several host:port pairs: split the authority by hand, one seed per pair.
  const match = /^[a-z+]+:\/\/(?:([^@/]*)@)?([^/?#]+)/i.exec(url);
  if (!match) throw new Error("REDIS_URL: a cluster URL needs at least one host:port");
  const [user = "", password = ""] = (match[1] ?? "").split(":").map(decodeURIComponent);
  const nodes = (match[2] as string).split(",").map((hostPort) => {
    const u = new URL(`redis://${hostPort}`);
    return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || 6379) };
  });
  const { enableOfflineQueue, ...perNode } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions: {
      ...perNode,
      ...(user ? { username: user } : {}),
      ...(password ? { password } : {}),
      ...(tls ? { tls: {} } : {}),
    },
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    // While a failover is under way the slot has no master for a moment: retry rather than fail.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
  };
  return new Cluster(nodes, clusterOptions);
}

/** A second connection like `client` with some options changed (a subscriber, a blocking reader). */
export function duplicateRedis(client: RedisClient, overrides: RedisOptions): RedisClient {
  if (client instanceof Cluster) {
    const { enableOfflineQueue, ...perNode } = overrides;
    return client.duplicate(undefined, {
      redisOptions: { ...client.options.redisOptions, ...perNode },
      ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    });
  }
  return client.duplicate(overrides);
}

/**
 * Key prefix of one catalog queue. BullMQ's scripts touch many keys of a queue at once, and in a
 * cluster every key of one script must be in one slot: the queue's name in braces (a hash tag) puts
 * all of that queue's keys in one slot, while different queues spread over the shards. A single
 * Redis keeps the plain prefix, so existing installs keep their queued jobs across an upgrade.
 */
export const queuePrefix = (prefix: string, queueName: string, client: RedisClient): string =>
  client instanceof Cluster ? `${prefix}:{${queueName}}` : prefix;

/** BullMQ needs noeviction: an evicted job key is a lost message. Returns a warning or null. */
export async function checkEvictionPolicy(redis: RedisClient): Promise<string | null> {
  try {
    const reply = (await redis.config("GET", "maxmemory-policy")) as unknown as string[];
    const policy = reply[1];
    return policy && policy !== "noeviction"
      ? `Redis maxmemory-policy is "${policy}"; it must be "noeviction" or queued jobs can be evicted`
      : null;
  } catch {
    return null; // CONFIG may be disabled on managed Redis
  }
}

/** What the services call a Redis connection: either kind (`RedisClient`). */
export type { Cluster, RedisClient as Redis };
