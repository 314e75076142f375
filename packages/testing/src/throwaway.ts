import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./env.ts";

/** A TCP port nothing listens on right now (bound, then released). */
export function sparePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
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
