import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { connectClient, createPrisma, type PrismaClient, poolOf } from "@mailroom/db";
import { waitFor } from "@mailroom/testing";
import { DEFAULT_MAX_TRIES, processWithBudget } from "../src/attempts.ts";
import { isDependencyOutage } from "../src/outage.ts";
import type { ProcessDeps } from "../src/process.ts";
import { DELIVER_UNMATCHED } from "../src/shield.ts";
import { useDrivenPipeline } from "./driven.ts";

/**
 * A try cut by a server that turned read-only (a failover under way) or that cancelled the store on
 * its statement_timeout (an overloaded server) is an outage, not the message's fault: it is given
 * back, so even the last try of the budget leaves good mail pending for the next one instead of
 * storing it as PROCESSING_FAILED. The engine's connections are one session (a pool of one), turned
 * read-only or given a timeout from inside the try, after it was counted.
 */
describe("a read-only database or a statement timeout in the middle of the last try", () => {
  const t = useDrivenPipeline("failover.example");
  let session: PrismaClient;
  beforeAll(() => {
    session = createPrisma(t.p.env.databaseUrl, { max: 1 });
  });
  afterAll(() => session?.$disconnect());

  /** Accepted over SMTP, its job removed, and every try but the last one already used. */
  const lastTry = async (subject: string) => {
    const raw = `From: a@outside.example\r\nTo: in@failover.example\r\nSubject: ${subject}\r\n\r\nbody\r\n`;
    const r = await t.p.sendRaw("a@outside.example", ["in@failover.example"], raw);
    expect(r.response).toMatch(/^250 /);
    const rcpt = await t.p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
    await (await t.p.queue.getJob(rcpt.id))?.remove();
    await t.p.prisma.spoolRecipient.update({ where: { id: rcpt.id }, data: { attempts: DEFAULT_MAX_TRIES - 1 } });
    return rcpt.id;
  };
  /** Runs once the try is counted (the shield step), on the one session the store will use. */
  const during = (statement: string): ProcessDeps => ({
    ...t.deps,
    prisma: session,
    shield: async () => {
      await poolOf(session).query(statement);
      return DELIVER_UNMATCHED;
    },
  });
  /** The try failed as an outage, was given back, and the next one stores the message normally. */
  const givenBackThenStored = async (rcptId: string, failed: unknown) => {
    expect(isDependencyOutage(failed)).toBe(true);
    const row = await t.p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } });
    expect(row).toMatchObject({ status: "pending", attempts: DEFAULT_MAX_TRIES - 1 });
    expect(await processWithBudget(t.deps, rcptId)).toMatchObject({ outcome: "stored" });
    const email = await t.p.prisma.email.findFirstOrThrow({ where: { spoolRecipientId: rcptId } });
    expect(email.spfVerdict).not.toBe("PROCESSING_FAILED");
  };

  it("read-only (25006, as during a failover)", async () => {
    const rcptId = await lastTry("read-only");
    const failed = await processWithBudget(during("SET SESSION default_transaction_read_only = on"), rcptId).catch(
      (e: unknown) => e,
    );
    await givenBackThenStored(rcptId, failed);
  });

  it("the store cancelled by statement_timeout (57014)", async () => {
    const rcptId = await lastTry("timed out");
    // The store waits for this lock until its statement_timeout cancels it.
    const holder = await connectClient(t.p.env.databaseUrl);
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE emails IN SHARE MODE");
    let settled = false;
    const run = processWithBudget(during("SET SESSION statement_timeout = 300"), rcptId)
      .catch((e: unknown) => e)
      .finally(() => {
        settled = true;
      });
    const waiters = async () =>
      (
        await holder.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
      ).rows.map((r) => r.pid);
    // The first store waits, then is cancelled. Had the try counted, a second store (as
    // PROCESSING_FAILED, on a fresh session) would wait for the lock in turn: that ends the wait too.
    const [first] = await waitFor(
      async () => {
        const w = await waiters();
        return w.length > 0 && w;
      },
      { what: "the store waiting" },
    );
    await waitFor(async () => settled || (await waiters()).some((pid) => pid !== first), {
      what: "the try to end",
      timeoutMs: 60_000,
    });
    await holder.query("ROLLBACK");
    await holder.end();
    const failed = await run;
    expect((failed as { code?: string }).code).toBe("57014");
    await givenBackThenStored(rcptId, failed);
  });
});
