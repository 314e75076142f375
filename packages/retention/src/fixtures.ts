import { newId, type PrismaClient } from "@mailroom/db";

/**
 * Rows for retention tests, written through Prisma against the real database. Only what the
 * retention pass reads is set; everything else takes the schema's defaults.
 */
export const DAY = 86_400_000;

export function fixtures(prisma: PrismaClient, now: Date) {
  const ago = (days: number) => new Date(now.getTime() - days * DAY);

  async function account(retentionDays: number | null) {
    const a = await prisma.account.create({ data: { id: newId("account"), name: "retention", retentionDays } });
    const endpoint = await prisma.endpoint.create({
      data: { id: newId("endpoint"), accountId: a.id, name: "hook", url: "https://example.com/h", secret: "whsec_x" },
    });
    return { id: a.id, endpointId: endpoint.id };
  }

  async function spool(raw: Buffer, days: number) {
    const s = await prisma.spooledMessage.create({
      data: {
        id: newId("spool"),
        mailFrom: "a@sender.test",
        size: raw.length,
        sha256: "x",
        raw: new Uint8Array(raw),
        receivedAt: ago(days),
      },
    });
    return s.id;
  }

  async function thread(accountId: string, days: number) {
    const t = await prisma.thread.create({
      data: { id: newId("thread"), accountId, subject: "s", lastMessageAt: ago(days) },
    });
    return t.id;
  }

  type EmailInput = {
    account: { id: string; endpointId: string };
    days: number;
    threadId?: string;
    spoolId?: string;
    attachment?: Buffer;
    delivery?: "delivered" | "dead" | "retrying" | "pending";
    attempts?: number;
    sendStatus?: string;
  };

  async function email(input: EmailInput) {
    const accountId = input.account.id;
    const threadId = input.threadId ?? (await thread(accountId, input.days));
    let spoolRecipientId: string | null = null;
    if (input.spoolId) {
      const r = await prisma.spoolRecipient.create({
        data: {
          id: newId("spoolRecipient"),
          spoolId: input.spoolId,
          accountId,
          domainId: "dom_none",
          recipient: "to@example.com",
          status: "stored",
        },
      });
      spoolRecipientId = r.id;
    }
    const e = await prisma.email.create({
      data: {
        id: newId("email"),
        accountId,
        threadId,
        direction: input.sendStatus ? "outbound" : "inbound",
        messageId: `<${newId("email")}@sender.test>`,
        fromAddress: "a@sender.test",
        toAddresses: ["to@example.com"],
        ccAddresses: [],
        replyTo: [],
        references: [],
        subject: "s",
        textBody: "t",
        htmlBody: "",
        spfVerdict: "PASS",
        dkimVerdict: "PASS",
        dmarcVerdict: "PASS",
        contentHash: "h",
        spoolId: input.spoolId ?? null,
        spoolRecipientId,
        sendStatus: input.sendStatus ?? null,
        receivedAt: ago(input.days),
      },
    });
    let attachmentId: string | null = null;
    if (input.attachment) {
      const a = await prisma.attachment.create({
        data: {
          id: newId("attachment"),
          emailId: e.id,
          index: 0,
          filename: "a.bin",
          contentType: "application/octet-stream",
          size: input.attachment.length,
          content: new Uint8Array(input.attachment),
        },
      });
      attachmentId = a.id;
    }
    let deliveryId: string | null = null;
    if (input.delivery) {
      const d = await prisma.delivery.create({
        data: {
          id: newId("delivery"),
          accountId,
          emailId: e.id,
          endpointId: input.account.endpointId,
          status: input.delivery,
          maxAttempts: 5,
        },
      });
      deliveryId = d.id;
      for (let n = 1; n <= (input.attempts ?? 0); n++) {
        await prisma.deliveryAttempt.create({
          data: {
            id: newId("deliveryAttempt"),
            deliveryId: d.id,
            number: n,
            durationMs: 1,
            startedAt: ago(input.days),
            finishedAt: ago(input.days),
          },
        });
      }
    }
    return { id: e.id, threadId, attachmentId, deliveryId, spoolRecipientId };
  }

  async function block(accountId: string, days: number) {
    const b = await prisma.blockRecord.create({
      data: {
        id: newId("block"),
        accountId,
        ruleName: "r",
        sender: "a@sender.test",
        recipient: "to@example.com",
        subject: "s",
        receivedAt: ago(days),
      },
    });
    return b.id;
  }

  return { ago, account, spool, thread, email, block };
}
