import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { emailView } from "@mailroom/core";
import { createPrisma, type PrismaClient } from "@mailroom/db";
import type { PgProxy } from "@mailroom/testing";
import { startPgProxy, waitFor } from "@mailroom/testing";
import { DEFAULT_MAX_TRIES, processWithBudget } from "../src/attempts.ts";
import { isDependencyOutage } from "../src/outage.ts";
import { type ProcessDeps, processRecipient } from "../src/process.ts";
import { useDrivenPipeline } from "./driven.ts";
import { poisonMessage } from "./poison-message.ts";

/**
 * The processing budget (attempts.ts): a poison message ends stored as PROCESSING_FAILED after a
 * bounded number of tries, counted in Postgres; a dependency outage never counts. The worker is
 * not running here: each test drives processWithBudget as the inbound job does, try after try.
 */
describe("poison messages", () => {
  const t = useDrivenPipeline("poison.example");

  /** Accepted over SMTP; its job removed so only the test drives it. */
  const accept = async (raw: string) => {
    const r = await t.p.sendRaw("mallory@outside.example", ["in@poison.example"], raw);
    expect(r.response).toMatch(/^250 /);
    const rcpt = await t.p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
    await (await t.p.queue.getJob(rcpt.id))?.remove();
    return { spoolId: r.spoolId!, rcptId: rcpt.id };
  };

  it("fails its first tries, then is stored from its raw bytes as PROCESSING_FAILED, with its deliveries", async () => {
    const { spoolId, rcptId } = await accept(poisonMessage("in@poison.example", "still readable"));
    for (let i = 1; i < DEFAULT_MAX_TRIES; i++) {
      await expect(processWithBudget(t.deps, rcptId)).rejects.toThrow();
      const row = await t.p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } });
      expect(row).toMatchObject({ status: "pending", attempts: i });
      expect(row.lastError).toMatch(/index row|54000/);
    }
    const last = await processWithBudget(t.deps, rcptId);
    expect(last).toMatchObject({ outcome: "stored", parsed: false });

    const rcpt = await t.p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } });
    expect(rcpt).toMatchObject({ status: "stored", attempts: DEFAULT_MAX_TRIES });
    const email = await t.p.prisma.email.findFirstOrThrow({
      where: { spoolId },
      include: { deliveries: true, attachments: true },
    });
    expect(email).toMatchObject({
      subject: "still readable", // the minimal parse reads what headers it safely can
      fromAddress: "mallory@outside.example",
      spamVerdict: "PROCESSING_FAILED",
      spfVerdict: "PROCESSING_FAILED",
      dkimVerdict: "PROCESSING_FAILED",
      dmarcVerdict: "PROCESSING_FAILED",
    });
    expect(email.messageId.length).toBeLessThanOrEqual(998);
    expect(email.deliveries.map((x) => x.endpointId)).toEqual([t.endpointId]);
    expect(await t.p.deliveryQueue.getJob(`${email.deliveries[0]!.id}.1`)).toBeTruthy();
    expect(emailView(email, email.attachments, "http://api.test")).toMatchObject({ spfVerdict: "PROCESSING_FAILED" });
    // The raw bytes are kept for GET /emails/{id}/raw.
    expect(await t.p.prisma.spooledMessage.count({ where: { id: spoolId } })).toBe(1);
  });

  it("a message whose tries died with the process (counted when they began) is stored as PROCESSING_FAILED", async () => {
    const { spoolId, rcptId } = await accept(poisonMessage("in@poison.example"));
    // Five tries began and none got as far as recording its failure (e.g. the process was killed).
    await t.p.prisma.spoolRecipient.update({ where: { id: rcptId }, data: { attempts: DEFAULT_MAX_TRIES } });
    expect(await processWithBudget(t.deps, rcptId)).toMatchObject({ outcome: "stored", parsed: false });
    const email = await t.p.prisma.email.findFirstOrThrow({ where: { spoolId } });
    expect(email.spamVerdict).toBe("PROCESSING_FAILED");
  });

  it("the last resort stores it with no header read at all (subject empty, Message-ID generated)", async () => {
    const { spoolId, rcptId } = await accept(poisonMessage("in@poison.example", "unread"));
    expect(await processRecipient(t.deps, rcptId, { failed: "empty" })).toMatchObject({ outcome: "stored" });
    const email = await t.p.prisma.email.findFirstOrThrow({ where: { spoolId }, include: { deliveries: true } });
    expect(email).toMatchObject({
      subject: "",
      fromAddress: "mallory@outside.example",
      spamVerdict: "PROCESSING_FAILED",
    });
    expect(email.messageId).toMatch(/^<[0-9a-f]{32}@mx\.mailroom\.test>$/);
    expect(email.deliveries).toHaveLength(1);
  });

  describe("Postgres unreachable", () => {
    let proxy: PgProxy;
    let proxied: PrismaClient;
    beforeAll(async () => {
      proxy = await startPgProxy(t.p.env.databaseUrl);
      proxied = createPrisma(proxy.url, { max: 2 });
    });
    afterAll(async () => {
      await proxied?.$disconnect().catch(() => undefined);
      await proxy?.close();
    });

    it("more failed tries than the budget while Postgres is down count nothing; the mail is then stored normally", async () => {
      const { spoolId, rcptId } = await accept(
        "From: a@outside.example\r\nTo: in@poison.example\r\nSubject: good\r\n\r\nbody\r\n",
      );
      proxy.down();
      for (let i = 0; i < DEFAULT_MAX_TRIES + 2; i++) {
        const err = await processWithBudget({ ...t.deps, prisma: proxied }, rcptId).catch((e: unknown) => e);
        expect(isDependencyOutage(err)).toBe(true);
      }
      proxy.up();
      expect(await t.p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } })).toMatchObject({
        status: "pending",
        attempts: 0,
      });
      expect(await processWithBudget({ ...t.deps, prisma: proxied }, rcptId)).toMatchObject({ outcome: "stored" });
      const email = await t.p.prisma.email.findFirstOrThrow({ where: { spoolId } });
      expect(email.spfVerdict).not.toBe("PROCESSING_FAILED");
      expect(email.spamVerdict).not.toBe("PROCESSING_FAILED");
    });

    it("a try cut in the middle by an outage is given back once Postgres returns", async () => {
      const { rcptId } = await accept(
        "From: a@outside.example\r\nTo: in@poison.example\r\nSubject: cut\r\n\r\nbody\r\n",
      );
      let cut = false;
      const cutting: ProcessDeps = {
        ...t.deps,
        prisma: proxied,
        // Runs after the try was counted: Postgres goes away, and the next query fails for real.
        shield: async () => {
          proxy.down();
          try {
            await proxied.shieldRule.count();
          } finally {
            cut = true;
          }
          throw new Error("unreachable");
        },
      };
      const run = processWithBudget(cutting, rcptId).catch((e: unknown) => e);
      await waitFor(async () => cut, { what: "the cut" });
      proxy.up();
      expect(isDependencyOutage(await run)).toBe(true);
      const row = await t.p.prisma.spoolRecipient.findUniqueOrThrow({ where: { id: rcptId } });
      expect(row).toMatchObject({ status: "pending", attempts: 0 });
    });
  });
});
