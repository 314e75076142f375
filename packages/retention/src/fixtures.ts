import { newId, type PrismaClient } from "@mailroom/db";

/**
 * Rows for retention tests, written through Prisma against the real database. Only what the
 * retention pass reads is set; everything else takes the schema's defaults.
 */
export const DAY = 86_400_000;

/** The database and the test's clock: `ago(days)` is that many days before the test's `now`. */
type Rows = { prisma: PrismaClient; ago: (days: number) => Date };

type Account = { id: string; endpointId: string };

type EmailInput = {
  account: Account;
  days: number;
  threadId?: string;
  spoolId?: string;
  attachment?: Buffer;
  delivery?: "delivered" | "dead" | "retrying" | "pending";
  attempts?: number;
  sendStatus?: string;
};

async function account({ prisma }: Rows, retentionDays: number | null): Promise<Account> {
  const a = await prisma.account.create({ data: { id: newId("account"), name: "retention", retentionDays } });
  const endpoint = await prisma.endpoint.create({
    data: { id: newId("endpoint"), accountId: a.id, name: "hook", url: "https://example.com/h", secret: "whsec_x" },
  });
  return { id: a.id, endpointId: endpoint.id };
}

async function spool({ prisma, ago }: Rows, raw: Buffer, days: number) {
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

async function thread({ prisma, ago }: Rows, accountId: string, days: number) {
  const t = await prisma.thread.create({
    data: { id: newId("thread"), accountId, subject: "s", lastMessageAt: ago(days) },
  });
  return t.id;
}

/** The stored recipient row of the spooled message the email came from. */
async function spoolRecipient({ prisma }: Rows, spoolId: string, accountId: string) {
  const r = await prisma.spoolRecipient.create({
    data: {
      id: newId("spoolRecipient"),
      spoolId,
      accountId,
      domainId: "dom_none",
      recipient: "to@example.com",
      status: "stored",
    },
  });
  return r.id;
}

async function emailRow({ prisma, ago }: Rows, input: EmailInput, threadId: string, spoolRecipientId: string | null) {
  const e = await prisma.email.create({
    data: {
      id: newId("email"),
      accountId: input.account.id,
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
  return e.id;
}

async function attachment({ prisma }: Rows, emailId: string, content: Buffer) {
  const a = await prisma.attachment.create({
    data: {
      id: newId("attachment"),
      emailId,
      index: 0,
      filename: "a.bin",
      contentType: "application/octet-stream",
      size: content.length,
      content: new Uint8Array(content),
    },
  });
  return a.id;
}

/** A delivery in `status` with `attempts` attempts, all dated at the email's age. */
async function delivery(rows: Rows, input: EmailInput, emailId: string, status: NonNullable<EmailInput["delivery"]>) {
  const { prisma, ago } = rows;
  const d = await prisma.delivery.create({
    data: {
      id: newId("delivery"),
      accountId: input.account.id,
      emailId,
      endpointId: input.account.endpointId,
      status,
      maxAttempts: 5,
    },
  });
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
  return d.id;
}

/** An email `days` old, with its thread (new unless given) and, as asked, its spool recipient, attachment and delivery. */
async function email(rows: Rows, input: EmailInput) {
  const accountId = input.account.id;
  const threadId = input.threadId ?? (await thread(rows, accountId, input.days));
  const spoolRecipientId = input.spoolId ? await spoolRecipient(rows, input.spoolId, accountId) : null;
  const id = await emailRow(rows, input, threadId, spoolRecipientId);
  const attachmentId = input.attachment ? await attachment(rows, id, input.attachment) : null;
  const deliveryId = input.delivery ? await delivery(rows, input, id, input.delivery) : null;
  return { id, threadId, attachmentId, deliveryId, spoolRecipientId };
}

async function block({ prisma, ago }: Rows, accountId: string, days: number) {
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

export function fixtures(prisma: PrismaClient, now: Date) {
  const ago = (days: number) => new Date(now.getTime() - days * DAY);
  const rows: Rows = { prisma, ago };
  return {
    ago,
    account: (retentionDays: number | null) => account(rows, retentionDays),
    spool: (raw: Buffer, days: number) => spool(rows, raw, days),
    thread: (accountId: string, days: number) => thread(rows, accountId, days),
    email: (input: EmailInput) => email(rows, input),
    block: (accountId: string, days: number) => block(rows, accountId, days),
  };
}
