import { readFileSync } from "node:fs";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { checkout, connectClient, createPool, createPrisma, type PrismaClient } from "@mailroom/db";
import {
  createTestEnv,
  sparePort,
  startPgProxy,
  startThrowawayPostgres,
  type TestEnv,
  type ThrowawayPostgres,
  waitFor,
} from "@mailroom/testing";
import pg from "pg";
import { isDependencyOutage } from "../src/outage.ts";

/**
 * durability.md: an outage never turns good mail into PROCESSING_FAILED, because a try that failed
 * on an outage is given back (attempts.ts). That holds only for what isDependencyOutage recognises,
 * so each class of outage is produced here for real, by Postgres, node-postgres and Prisma, and
 * checked; and so are faults of the message, which must still count.
 */
const failure = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => {
      throw new Error("expected a failure");
    },
    (err: unknown) => err,
  );
const codeOf = (err: unknown) => (err as { code?: string }).code;

describe("outages, as Postgres and the drivers report them", () => {
  let env: TestEnv;
  let pool: pg.Pool;
  let prisma: PrismaClient;
  beforeAll(async () => {
    env = await createTestEnv();
    pool = createPool(env.databaseUrl, { max: 4 });
    prisma = createPrisma(env.databaseUrl, { max: 2 });
  });
  afterAll(async () => {
    await pool?.end();
    await prisma?.$disconnect();
    await env?.cleanup();
  });

  it("a statement timeout (57014), through node-postgres and Prisma", async () => {
    const { client, release } = await checkout(pool);
    await client.query("SET statement_timeout = 100");
    const direct = await failure(client.query("SELECT pg_sleep(10)"));
    await client.query("RESET statement_timeout");
    release();
    expect(codeOf(direct)).toBe("57014");
    const viaPrisma = await failure(
      prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe("SET LOCAL statement_timeout = 100");
        await tx.$queryRawUnsafe("SELECT pg_sleep(10)");
      }),
    );
    expect([isDependencyOutage(direct), isDependencyOutage(viaPrisma)]).toEqual([true, true]);
  });

  it("a write in a read-only transaction (25006, a standby or a failover), through node-postgres and Prisma", async () => {
    const { client, release } = await checkout(pool);
    await client.query("BEGIN READ ONLY");
    const direct = await failure(client.query("CREATE TABLE never_made (n int)"));
    await client.query("ROLLBACK");
    release();
    expect(codeOf(direct)).toBe("25006");
    const viaPrisma = await failure(
      prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe("SET TRANSACTION READ ONLY");
        await tx.$executeRawUnsafe("CREATE TABLE never_made (n int)");
      }),
    );
    expect([isDependencyOutage(direct), isDependencyOutage(viaPrisma)]).toEqual([true, true]);
  });

  it("a session an operator terminates (57P01), and the statements after it on that connection", async () => {
    const held = await checkout(pool);
    const pid = (await held.client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid;
    const sleeping = failure(held.client.query("SELECT pg_sleep(30)"));
    await waitFor(
      async () =>
        (await pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep'", [pid])).rowCount,
      { what: "the session asleep" },
    );
    await pool.query("SELECT pg_terminate_backend($1)", [pid]);
    const terminated = await sleeping;
    expect(codeOf(terminated)).toBe("57P01");
    await waitFor(async () => held.lost(), { what: "the connection's error event" });
    const after = await failure(held.client.query("SELECT 1"));
    held.release();
    expect([isDependencyOutage(terminated), isDependencyOutage(after)]).toEqual([true, true]);
  });

  it("Postgres unreachable: refused, a connect that never answers, a connection cut mid-statement", async () => {
    const refused = await failure(connectClient(`postgresql://postgres@127.0.0.1:${await sparePort()}/x`));
    expect(codeOf(refused)).toBe("ECONNREFUSED");
    // A listener that never speaks: the pool's connectionTimeoutMillis gives up.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const mute = createPool(`postgresql://postgres@127.0.0.1:${(silent.address() as net.AddressInfo).port}/x`, {
      connectionTimeoutMillis: 200,
    });
    const timedOut = await failure(mute.query("SELECT 1"));
    await mute.end();
    silent.close();
    const proxy = await startPgProxy(env.databaseUrl);
    const viaProxy = createPool(proxy.url, { max: 1 });
    const cut = failure(viaProxy.query("SELECT pg_sleep(30)"));
    await waitFor(async () => proxy.open() > 0, { what: "the proxied connection" });
    proxy.down();
    const dropped = await cut;
    await viaProxy.end();
    await proxy.close();
    expect([refused, timedOut, dropped].map(isDependencyOutage)).toEqual([true, true, true]);
  });

  it("faults of the message still count: bad input, a duplicate, a value too large, bytes Postgres refuses", async () => {
    const faults = await Promise.all([
      failure(pool.query("SELECT 'x'::int")),
      failure(pool.query("SELECT repeat('x', 1073741824)")),
      failure(pool.query("SELECT convert_from('\\xff'::bytea, 'UTF8')")),
      failure(pool.query("SELECT id FROM (VALUES (1), (1)) v(id) GROUP BY id HAVING 1/0 = 1")),
      failure(
        prisma.account
          .create({ data: { id: "acc_same", name: "a" } })
          .then(() => prisma.account.create({ data: { id: "acc_same", name: "b" } })),
      ),
    ]);
    expect(faults.map(codeOf).slice(0, 4)).toEqual(["22P02", "54000", "22021", "22012"]);
    expect(faults.map(isDependencyOutage)).toEqual([false, false, false, false, false]);
  });
});

/**
 * What a private cluster can be made to say that the shared one must not: too many connections, a
 * crash of another backend (every session ends, then recovery), and a shutdown in progress.
 */
describe("outages of a whole server (a throwaway PostgreSQL)", () => {
  let server: ThrowawayPostgres;
  beforeAll(async () => {
    server = await startThrowawayPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  const pidOf = async (c: pg.Client) => Number((await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid);
  /** The postmaster: the parent of any backend. */
  const postmasterOf = (backend: number) =>
    Number(readFileSync(`/proc/${backend}/stat`, "utf8").split(") ")[1]?.split(" ")[1]);

  it("too many connections (53300), a crash of another backend (57P02), a shutdown under way (57P03)", async () => {
    const admin = await connectClient(server.url("postgres"));
    await admin.query("CREATE ROLE blip_limited LOGIN CONNECTION LIMIT 0");
    const tooMany = await failure(connectClient(server.url("postgres").replace("postgres@", "blip_limited@")));
    expect(codeOf(tooMany)).toBe("53300");

    // Another backend dies (SIGKILL): the postmaster ends every session and recovers. Since
    // PostgreSQL 14 the 57P02 comes as a warning (a notice) just before the connection closes, so what
    // the statement fails with is the drop itself.
    const victim = await connectClient(server.url("postgres"));
    const postmaster = postmasterOf(await pidOf(victim));
    const notices: string[] = [];
    admin.on("notice", (n) => notices.push(String(n.code)));
    const crashed = failure(admin.query("SELECT pg_sleep(30)"));
    process.kill(await pidOf(victim), "SIGKILL");
    const crash = await crashed;
    expect(notices).toEqual(["57P02"]);
    // A close or a reset, whichever the socket sees first.
    expect((crash as Error).message).toMatch(/^(Connection terminated unexpectedly|read ECONNRESET)$/);
    await victim.end().catch(() => undefined);
    await admin.end().catch(() => undefined);

    // A smart shutdown (SIGTERM) waits for open sessions and refuses new ones meanwhile.
    const last = await waitFor(() => connectClient(server.url("postgres")).catch(() => null), {
      what: "the server back from recovery",
      timeoutMs: 60_000,
    });
    process.kill(postmaster, "SIGTERM");
    const shuttingDown = await waitFor(
      () => failure(connectClient(server.url("postgres")).then((c) => c.end())).catch(() => null),
      { what: "a connection refused during the shutdown", timeoutMs: 60_000 },
    );
    expect(codeOf(shuttingDown)).toBe("57P03");
    await last.end();
    expect([tooMany, crash, shuttingDown].map(isDependencyOutage)).toEqual([true, true, true]);
  }, 180_000);
});

describe("codes no local server can be made to send", () => {
  it("connection exceptions (08xxx), resource and system errors, are outages; the message's are not", () => {
    const outage = [
      "08000",
      "08001",
      "08003",
      "08004",
      "08006",
      "08P01",
      "57P04",
      "57P05",
      "53100",
      "53200",
      "53400",
      "58030",
    ];
    const message = ["22001", "22021", "22P02", "23502", "23503", "23505", "54000", "XX000"];
    const driverError = (code: string) => Object.assign(new pg.DatabaseError("x", 0, "error"), { code });
    expect(outage.filter((c) => !isDependencyOutage(driverError(c)))).toEqual([]);
    expect(message.filter((c) => isDependencyOutage(driverError(c)))).toEqual([]);
  });
});
