import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "@mailroom/testing";

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

export function cleanupDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
