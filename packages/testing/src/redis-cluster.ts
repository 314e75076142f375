import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { waitFor } from "./env.ts";

/**
 * A private Redis Cluster on loopback (Debian's redis-server in cluster mode): `masters` masters,
 * each with one replica so a master can be failed over. Never the shared Redis.
 */
export type TestRedisCluster = {
  /** `redis+cluster://127.0.0.1:<port>,…` naming three seed nodes, as REDIS_URL would. */
  url: string;
  ports: number[];
  /** The port of the master that serves `key`'s slot now. */
  masterOf(key: string): Promise<number>;
  /**
   * Fails that master over to its replica (`CLUSTER FAILOVER` on the replica: coordinated, the
   * replica first takes every write the master acknowledged) and waits until every node agrees.
   * Returns the new master's port.
   */
  failover(key: string): Promise<number>;
  stop(): Promise<void>;
};

const run = promisify(execFile);

/**
 * A port whose cluster bus port (+10000) is free too: ports 20000-22767 and buses 30000-32767, both
 * below the kernel's ephemeral range (32768 up), so no outgoing connection on the machine takes one
 * between this check and redis-server's bind (sparePort keeps to 10000-19999 for the same reason).
 */
async function clusterPort(taken: Set<number>): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once("error", () => resolve(false));
      s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
    });
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 2_768);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await free(port)) && (await free(port + 10_000))) {
      taken.add(port);
      return port;
    }
  }
}

const node = (port: number) => new Redis({ host: "127.0.0.1", port, lazyConnect: false, maxRetriesPerRequest: 1 });

async function query<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = node(port);
  r.on("error", () => undefined);
  try {
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

type SlotRange = [number, number, [string, number, string], ...[string, number, string][]];

/** One redis-server per port in cluster mode, its files (node config, AOF) under `dir`. */
function spawnNodes(ports: number[], dir: string): ChildProcess[] {
  return ports.map((port) =>
    spawn(
      "/usr/bin/redis-server",
      [
        ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
        ...["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`],
        ...["--cluster-node-timeout", "5000", "--appendonly", "yes", "--appendfilename", `aof-${port}`],
        ...["--appenddirname", `aof-${port}`, "--save", "", "--maxmemory-policy", "noeviction"],
      ],
      { stdio: "ignore" },
    ),
  );
}

async function killNodes(children: ChildProcess[], dir: string): Promise<void> {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once("exit", () => resolve());
          c.kill("SIGKILL");
        }),
    ),
  );
  rmSync(dir, { recursive: true, force: true });
}

const clusterSlots = async (port: number) => (await query(port, (r) => r.cluster("SLOTS"))) as unknown as SlotRange[];

/** Joins the running nodes into one cluster (half masters, half replicas) and waits until it is usable. */
async function formCluster(ports: number[]): Promise<void> {
  for (const port of ports) {
    await waitFor(() => query(port, (r) => r.ping()).catch(() => false), {
      what: `redis-server on ${port}`,
      timeoutMs: 30_000,
    });
  }
  await run("/usr/bin/redis-cli", [
    "--cluster",
    "create",
    ...ports.map((p) => `127.0.0.1:${p}`),
    "--cluster-replicas",
    "1",
    "--cluster-yes",
  ]);
  const settled = async () => {
    for (const port of ports) {
      const info = await query(port, (r) => r.cluster("INFO"));
      if (!String(info).includes("cluster_state:ok")) return false;
    }
    // Every master has its replica attached and in sync, so a failover has somewhere to go.
    const slots = await clusterSlots(ports[0] as number);
    return slots.length > 0 && slots.every((range) => range.length >= 4);
  };
  await waitFor(settled, { what: "the Redis cluster to settle", timeoutMs: 60_000, intervalMs: 200 });
}

/** The slot of `key` and the ports of its master and replicas, as the first node sees them. */
async function slotOwner(ports: number[], key: string) {
  const slot = (await query(ports[0] as number, (r) => r.cluster("KEYSLOT", key))) as number;
  const ranges = await clusterSlots(ports[0] as number);
  const range = ranges.find(([from, to]) => slot >= from && slot <= to);
  if (!range) throw new Error(`no node serves slot ${slot}`);
  const [, , master, ...replicas] = range;
  return { slot, master: master[1], replicas: replicas.map((r) => r[1]) };
}

async function failover(ports: number[], key: string): Promise<number> {
  const { master, replicas } = await slotOwner(ports, key);
  const replica = replicas[0];
  if (replica === undefined) throw new Error(`master ${master} has no replica`);
  await query(replica, (r) => r.cluster("FAILOVER"));
  const { slot } = await slotOwner(ports, key);
  // Done when every node sees the replica as the slot's master.
  await waitFor(
    async () => {
      for (const port of ports) {
        const range = (await clusterSlots(port)).find(([from, to]) => slot >= from && slot <= to);
        if (!range || range[2][1] !== replica) return false;
      }
      return true;
    },
    { what: `replica ${replica} to take over from ${master}`, timeoutMs: 60_000, intervalMs: 100 },
  );
  return replica;
}

export async function startRedisCluster({ masters = 3 } = {}): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), "mailroom-redis-cluster-"));
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let i = 0; i < masters * 2; i++) ports.push(await clusterPort(taken));
  const children = spawnNodes(ports, dir);
  const stop = () => killNodes(children, dir);
  try {
    await formCluster(ports);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `redis+cluster://${ports
      .slice(0, 3)
      .map((p) => `127.0.0.1:${p}`)
      .join(",")}`,
    ports,
    masterOf: async (key) => (await slotOwner(ports, key)).master,
    failover: (key) => failover(ports, key),
    stop,
  };
}
