import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { poolOf } from "@mailroom/db";
import { createLogger } from "@mailroom/log";
import { type ByteStore, createByteStore } from "@mailroom/storage";
import { type LocalS3, startLocalS3 } from "@mailroom/storage/testing";
import { mimeWithAttachment, type Seeded, seedAddress, seedDomain, splitStored } from "@mailroom/testing";
import { type ProcessDeps, processRecipient } from "../src/process.ts";
import type { DnsResolve } from "../src/verdicts.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

/**
 * BYTE_STORE=s3 in the rule engine, against s3rver over HTTP: a job that fails while the object
 * store is unreachable leaves the email `storing` with no attachment marked stored; the re-run
 * writes the objects; the raw MIME moves to the store only after the spool's last recipient.
 */
let p: Pipeline;
let d: Seeded;
let s3: LocalS3;
let gone: LocalS3;
let up: ByteStore;
let down: ByteStore;

const noDns: DnsResolve = async () => {
  throw Object.assign(new Error("no DNS in this test"), { code: "ENOTFOUND" });
};

beforeAll(async () => {
  p = await startPipeline({ engine: false });
  d = await seedDomain(p.prisma, "objects.example");
  await seedAddress(p.prisma, d, "a");
  await seedAddress(p.prisma, d, "b");
  s3 = await startLocalS3();
  gone = await startLocalS3();
  await gone.close(); // nothing listens there any more: every request fails
  up = createByteStore({ backend: "s3", s3: s3.settings }, poolOf(p.prisma));
  down = createByteStore({ backend: "s3", s3: gone.settings }, poolOf(p.prisma));
}, 120_000);

afterAll(async () => {
  up?.close();
  down?.close();
  await s3?.close();
  await p?.stop();
});

const deps = (bytes: ByteStore): ProcessDeps => ({
  prisma: p.prisma,
  deliveryQueue: p.deliveryQueue,
  logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
  resolver: noDns,
  mtaHostname: "mx.mailroom.test",
  parser: p.parser,
  bytes,
});

it("resumes attachment writes after a store outage and archives the raw once every recipient is done", async () => {
  const content = Buffer.from("%PDF-1.4\n".repeat(5000));
  const raw = mimeWithAttachment({
    to: "a@objects.example",
    messageId: "<store-outage@outside.example>",
    filename: "r.pdf",
    contentType: "application/pdf",
    content,
  });
  const sent = await p.sendRaw("sender@outside.example", ["a@objects.example", "b@objects.example"], raw);
  expect(sent.response).toMatch(/^250 /);
  const spoolId = sent.spoolId as string;
  const rcpt = async (to: string) => p.prisma.spoolRecipient.findFirstOrThrow({ where: { spoolId, recipient: to } });
  const a = await rcpt("a@objects.example");
  const b = await rcpt("b@objects.example");

  // The store is down while a is processed: the email is committed, its attachment is not stored.
  await expect(processRecipient(deps(down), a.id)).rejects.toThrow();
  expect((await rcpt("a@objects.example")).status).toBe("storing");
  const emailA = await p.prisma.email.findFirstOrThrow({
    where: { spoolRecipientId: a.id },
    include: { attachments: true },
  });
  expect(emailA.attachments.map((x) => x.stored)).toEqual([false]);

  // The re-run (the job's retry, or the sweeper's) writes the object, then marks it stored.
  await processRecipient(deps(up), a.id);
  expect((await rcpt("a@objects.example")).status).toBe("stored");
  const att = await p.prisma.attachment.findFirstOrThrow({ where: { emailId: emailA.id } });
  expect(att).toMatchObject({ stored: true, content: null });
  expect((await up.readAttachment({ id: att.id, emailId: emailA.id }))?.equals(content)).toBe(true);
  // b still needs the spool row: the raw MIME stays there.
  expect((await p.prisma.spooledMessage.findUniqueOrThrow({ where: { id: spoolId } })).raw).not.toBeNull();

  await processRecipient(deps(up), b.id);
  expect((await p.prisma.spooledMessage.findUniqueOrThrow({ where: { id: spoolId } })).raw).toBeNull();
  // What was accepted: our Received header, then the client's bytes.
  const archived = splitStored((await up.readRaw(spoolId)) ?? new Uint8Array(), Buffer.byteLength(raw));
  expect(archived.received).toMatch(/^Received: from /);
  expect(archived.client.toString("latin1")).toBe(raw);
  const emailB = await p.prisma.email.findFirstOrThrow({
    where: { spoolRecipientId: b.id },
    include: { attachments: true },
  });
  const attB = emailB.attachments[0];
  expect(attB && (await up.readAttachment({ id: attB.id, emailId: emailB.id }))?.equals(content)).toBe(true);
}, 180_000);
