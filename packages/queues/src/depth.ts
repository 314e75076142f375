import { catalog, type QueueKey } from "./catalog.ts";
import { queuePrefix, type RedisClient } from "./redis.ts";

/** The job states a reading counts, as `mailroom_queue_jobs{state}` names them. */
export const DEPTH_STATES = ["waiting", "active", "delayed", "prioritized", "failed", "completed"] as const;
export type DepthState = (typeof DEPTH_STATES)[number];

/**
 * One queue as Redis holds it now. `oldestSeconds`: how long the oldest job that could run now has
 * been waiting for a worker (0 when none waits): waiting (plain or with a priority), or delayed with
 * its time come but not promoted (only a running worker moves due jobs on).
 */
export type QueueDepth = { counts: Record<DepthState, number>; oldestSeconds: number };

/**
 * Counts per state and the oldest runnable job of one BullMQ queue in one script call (the keys of
 * one queue share a hash slot on a cluster). Candidates: the head of the wait list, the first and
 * last in line of the prioritized set (the `inbound` queue's jobs carry priorities: fairness.ts; in
 * that set the longest-waiting job is not always at an end, but the first in line is what a stuck
 * worker leaves waiting and the last is where retries and the busiest account wait), and the first
 * due delayed job. A job's readiness is its add time plus the delay it was
 * added with (BullMQ keeps that in `opts` and zeroes the `delay` field when it promotes the job), so
 * a delivery attempt scheduled an hour ahead is not an hour old the moment it becomes due. The
 * delayed set's score is the due time in ms times 0x1000 (BullMQ's getDelayedScore).
 */
const DEPTH_SCRIPT = `
local p = KEYS[1]
local now = tonumber(ARGV[1])
local r = {
  redis.call("LLEN", p .. "wait"), redis.call("LLEN", p .. "active"), redis.call("ZCARD", p .. "delayed"),
  redis.call("ZCARD", p .. "prioritized"), redis.call("ZCARD", p .. "failed"), redis.call("ZCARD", p .. "completed"),
}
local readyAt = now
local function waitingSince(id)
  if not id then return end
  local f = redis.call("HMGET", p .. id, "timestamp", "opts")
  local ts = tonumber(f[1])
  if not ts then return end
  local delay = 0
  local ok, opts = pcall(cjson.decode, f[2] or "{}")
  if ok and type(opts) == "table" and tonumber(opts["delay"]) then delay = tonumber(opts["delay"]) end
  readyAt = math.min(readyAt, ts + delay)
end
waitingSince(redis.call("LINDEX", p .. "wait", -1))
waitingSince(redis.call("ZRANGE", p .. "prioritized", 0, 0)[1])
waitingSince(redis.call("ZRANGE", p .. "prioritized", -1, -1)[1])
local due = redis.call("ZRANGE", p .. "delayed", 0, 0, "WITHSCORES")
if due[2] then readyAt = math.min(readyAt, math.floor(tonumber(due[2]) / 4096)) end
r[7] = now - readyAt
return r
`;

type DepthCommand = (key: string, now: number) => Promise<number[]>;
const COMMAND = "mailroomQueueDepth";

/** The script as an ioredis command (EVALSHA, loaded again by ioredis after a Redis restart). */
function depthCommand(redis: RedisClient): DepthCommand {
  const client = redis as unknown as Record<string, DepthCommand | undefined>;
  if (!client[COMMAND]) redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: DEPTH_SCRIPT });
  return (key, now) => (client[COMMAND] as DepthCommand).call(redis, key, now);
}

const keyOf = (redis: RedisClient, prefix: string, queue: QueueKey) => {
  const name = catalog[queue].name;
  return `${queuePrefix(prefix, name, redis)}:${name}:`;
};

function toDepth(reply: number[]): QueueDepth {
  const counts = Object.fromEntries(DEPTH_STATES.map((s, i) => [s, Number(reply[i] ?? 0)])) as QueueDepth["counts"];
  return { counts, oldestSeconds: Math.max(0, Number(reply[6] ?? 0)) / 1000 };
}

/**
 * Depth and oldest-job age of every catalog queue (or `queues`), read by any process that can reach
 * Redis, whether or not it consumes the queue. On a single Redis the scripts go in one pipeline (one
 * round trip); on a cluster each queue lives in its own slot, so each is its own call, in parallel.
 */
export async function readQueueDepths(
  redis: RedisClient,
  prefix: string,
  now: number,
  queues: readonly QueueKey[] = Object.keys(catalog) as QueueKey[],
): Promise<Map<QueueKey, QueueDepth>> {
  const command = depthCommand(redis);
  const keys = queues.map((q) => keyOf(redis, prefix, q));
  let replies: number[][];
  if (redis.isCluster) {
    replies = await Promise.all(keys.map((k) => command(k, now)));
  } else {
    const pipeline = redis.pipeline();
    for (const k of keys) (pipeline as unknown as Record<string, (k: string, n: number) => void>)[COMMAND]?.(k, now);
    const results = (await pipeline.exec()) ?? [];
    replies = results.map(([err, reply]) => {
      if (err) throw err;
      return reply as number[];
    });
  }
  return new Map(queues.map((q, i) => [q, toDepth(replies[i] ?? [])]));
}
