import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createTestEnv, type PgProxy, startPgProxy, type TestEnv, waitFor } from "@mailroom/testing";
import type pg from "pg";
import { withTransaction } from "./blobs.ts";
import { checkout, createPool } from "./pool.ts";

/**
 * Connections that break (here: a TCP proxy in front of Postgres cut) become errors of the calls
 * that used them, and broken connections are never handed out again. Without the listeners, each
 * cut below is an 'error' event nobody hears, thrown out of the socket's callback.
 */
describe("pools and held connections when Postgres goes away", () => {
  let env: TestEnv;
  let proxy: PgProxy;
  let pool: pg.Pool;
  const idleErrors: Error[] = [];
  const backend = async (db: Pick<pg.Pool, "query">) =>
    Number((await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid);

  beforeAll(async () => {
    env = await createTestEnv();
    proxy = await startPgProxy(env.databaseUrl);
    pool = createPool(proxy.url, { max: 2, onIdleError: (err) => idleErrors.push(err) });
  });
  afterAll(async () => {
    await pool.end();
    await proxy.close();
    await env.cleanup();
  });

  it("an idle connection that drops is reported and dropped; the next query connects again", async () => {
    await backend(pool);
    expect(pool.idleCount).toBe(1);
    proxy.down();
    await waitFor(async () => idleErrors.length > 0, { what: "the idle connection's error" });
    expect(pool.totalCount).toBe(0);
    proxy.up();
    expect(await backend(pool)).toBeGreaterThan(0);
  });

  it("a held connection that drops fails its statement, says so, and is closed on release", async () => {
    const held = await checkout(pool);
    const pid = await backend(held.client);
    proxy.down();
    await expect(held.client.query("SELECT 1")).rejects.toThrow();
    await waitFor(async () => held.lost(), { what: "the held connection's error" });
    held.release();
    proxy.up();
    expect(pool.totalCount).toBe(0);
    expect(await backend(pool)).not.toBe(pid);
  });

  it("a held connection released with an error is closed, not pooled", async () => {
    const held = await checkout(pool);
    const pid = await backend(held.client);
    held.release(new Error("state unknown"));
    expect(held.lost()).toBeUndefined();
    expect(await backend(pool)).not.toBe(pid);
  });

  it("withTransaction: a drop mid-transaction fails the call, nothing is committed, the connection is not reused", async () => {
    await pool.query("CREATE TABLE IF NOT EXISTS blip_probe (n int)");
    let pid = 0;
    const run = withTransaction(pool, async (db) => {
      pid = await backend(db);
      await db.query("INSERT INTO blip_probe VALUES (1)");
      proxy.down();
      await db.query("INSERT INTO blip_probe VALUES (2)");
    });
    await expect(run).rejects.toThrow();
    proxy.up();
    expect((await pool.query("SELECT count(*)::int AS n FROM blip_probe")).rows[0]?.n).toBe(0);
    expect(await backend(pool)).not.toBe(pid);
  });
});
