import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./env.ts";

/**
 * Where sparePort looks: below the kernel's ephemeral range (ip_local_port_range), which the
 * kernel gives every outgoing connection on the machine. A port from that range, checked free and
 * released, can be taken by any of the thousands of connections other tests open before the test
 * binds it (EADDRINUSE), and a client retrying a stopped server on it can be given it as its own
 * port and connect to itself. Below 20000: startRedisCluster's nodes take 20000-45000 and their
 * bus ports 30000-55000.
 */
const SPARE_FROM = 10_000;
const SPARE_TO = Math.min(19_999, ephemeralFrom() - 1);
const handedOut = new Set<number>();

function ephemeralFrom(): number {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
}

/** True if a listener could bind `port` on loopback now (port 0: the kernel picks; resolves the port). */
function bindable(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once("error", () => resolve(null));
    s.listen(port, "127.0.0.1", () => {
      const bound = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(bound));
    });
  });
}

/**
 * A TCP port nothing listens on right now (bound, then released) that no outgoing connection can
 * take before the caller binds it (see SPARE_FROM), and not handed out before by this process.
 */
export async function sparePort(): Promise<number> {
  for (let tries = 0; SPARE_TO > SPARE_FROM && tries < 200; tries++) {
    const port = SPARE_FROM + Math.floor(Math.random() * (SPARE_TO - SPARE_FROM + 1));
    if (handedOut.has(port)) continue;
    if ((await bindable(port)) === port) {
      handedOut.add(port);
      return port;
    }
  }
  // An ephemeral range reaching down here (not Linux's default): the old way, racy but working.
  const port = await bindable(0);
  if (port === null) throw new Error("sparePort: cannot bind a loopback port");
  return port;
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = net.connect(port, "127.0.0.1");
    c.once("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => resolve(false));
  });

/**
 * A private redis-server for fault tests (never the shared one): no persistence, so a restart is a
 * Redis that lost everything, the worst case the spool must survive.
 */
export type ThrowawayRedis = { port: number; url: string; stop(): Promise<void>; start(): Promise<void> };

export async function startThrowawayRedis(): Promise<ThrowawayRedis> {
  const port = await sparePort();
  const dir = mkdtempSync(join(tmpdir(), "mailroom-redis-"));
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn(
      "/usr/bin/redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
      { stdio: "ignore" },
    );
    await waitFor(() => accepts(port), { what: `redis-server on ${port}`, timeoutMs: 10_000 });
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise<void>((r) => c.once("exit", () => r()));
    c.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    async stop() {
      await stop();
    },
  };
}

/**
 * A private PostgreSQL cluster (initdb + pg_ctl, as the `postgres` user when we are root) on a spare
 * port, for the fault tests that stop Postgres mid-transaction. Never the shared server.
 */
export type ThrowawayPostgres = { port: number; url(db: string): string; stop(): Promise<void> };

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const port = await sparePort();
  const dir = mkdtempSync(join(tmpdir(), "mailroom-pg-"));
  const asPostgres = (cmd: string, args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const root = process.getuid?.() === 0;
      const child = spawn(root ? "runuser" : cmd, root ? ["-u", "postgres", "--", cmd, ...args] : args, {
        stdio: "ignore",
      });
      child.once("error", reject);
      child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}`))));
    });
  if (process.getuid?.() === 0) {
    // initdb refuses to run as root: the cluster belongs to the postgres user.
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  await asPostgres("/usr/lib/postgresql/15/bin/initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  await asPostgres("/usr/lib/postgresql/15/bin/pg_ctl", [
    "-D",
    data,
    "-l",
    join(dir, "log"),
    "-w",
    "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    "start",
  ]);
  let stopped = false;
  return {
    port,
    url: (db) => `postgresql://postgres@127.0.0.1:${port}/${db}`,
    async stop() {
      if (!stopped) {
        stopped = true;
        await asPostgres("/usr/lib/postgresql/15/bin/pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(
          () => undefined,
        );
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
