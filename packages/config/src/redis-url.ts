import { z } from "zod";

const CLUSTER = /^rediss?\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/i;

/**
 * True for a URL, or for a cluster named as `redis+cluster://[user:pw@]host:port[,host:port…]`
 * (`rediss+cluster://` with TLS), whose list of seed nodes URL cannot parse: each seed must.
 */
export function isRedisUrl(value: string): boolean {
  const cluster = CLUSTER.exec(value);
  if (!cluster && /^rediss?\+cluster:/i.test(value)) return false;
  const candidates = cluster
    ? (cluster[2] as string).split(",").map((seed) => `redis://${cluster[1] ? `${cluster[1]}@` : ""}${seed}`)
    : [value];
  return candidates.every((u) => {
    try {
      return new URL(u).host !== "" || !cluster;
    } catch {
      return false;
    }
  });
}

/** REDIS_URL: one Redis (`redis://`, `rediss://`) or a Redis Cluster (`redis+cluster://host:port,…`). */
export const redisUrlEnv = z
  .string()
  .refine(isRedisUrl, "must be a URL such as redis://host:6379, or redis+cluster://host:port[,host:port…]")
  .default("redis://127.0.0.1:6379");
