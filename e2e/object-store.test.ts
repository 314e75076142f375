import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { poolOf } from "@mailroom/db";
import type { Stack, TestAccount, WebhookFixture } from "@mailroom/stack";
import { mailAttachmentToWebhook, routeToWebhook, startWebhookFixture } from "@mailroom/stack";
import { type LocalS3, startLocalS3 } from "@mailroom/storage/testing";
import { type Receiver, splitStored, waitFor } from "@mailroom/testing";

/**
 * BYTE_STORE=s3 end to end, against s3rver (an S3-compatible server over HTTP on loopback): a
 * message with a 25 MB attachment arrives over SMTP, the rule engine puts the attachment and then
 * the raw MIME in the object store, the webhook payload links the attachment with a presigned URL
 * that downloads it byte-identical without any credentials, and the API serves both from the store.
 */
let s3: LocalS3;
let fx: WebhookFixture;
let stack: Stack;
let receiver: Receiver;
let acct: TestAccount;

beforeAll(async () => {
  s3 = await startLocalS3();
  fx = await startWebhookFixture({
    s3: { settings: s3.settings, signedUrlTtlSeconds: 900 },
    maxMessageBytes: 48 * 1024 * 1024,
  });
  ({ stack, receiver, acct } = fx);
}, 120_000);

afterAll(async () => {
  await fx?.close();
  await s3?.close();
});

it("stores a 25 MB attachment and the raw MIME in the object store; the payload's signed URL downloads it", async () => {
  const domain = "objects-e2e-example.com";
  await routeToWebhook(stack, acct, `big@${domain}`, `${receiver.url}/hook`);

  const content = randomBytes(25 * 1024 * 1024);
  const email = await mailAttachmentToWebhook(
    stack,
    receiver,
    {
      to: `big@${domain}`,
      subject: "Quarterly numbers",
      attachment: { filename: "numbers.bin", content, contentType: "application/octet-stream" },
    },
    300_000,
  );
  const link: string = email.attachments[0].url;
  expect(email.attachments[0]).toMatchObject({ filename: "numbers.bin", size: content.length, stored: true });
  expect(link.startsWith(`${s3.endpoint}/${s3.settings.bucket}/attachments/${email.id}/`)).toBe(true);
  expect(link).toMatch(/X-Amz-Expires=900&/);

  // No API key, no S3 credentials: the URL itself is the authorisation.
  const res = await fetch(link);
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);

  // The rows point at the store: no bytes in Postgres once the message is processed.
  const pool = poolOf(stack.prisma);
  const att = await pool.query(`SELECT stored, content IS NULL AS "notInRow" FROM attachments WHERE "emailId" = $1`, [
    email.id,
  ]);
  expect(att.rows).toEqual([{ stored: true, notInRow: true }]);
  const spool = await waitFor(
    async () => {
      const r = await pool.query<{ size: number; sha256: string; archived: boolean }>(
        `SELECT s.size, s.sha256, s.raw IS NULL AS archived FROM spooled_messages s JOIN emails e ON e."spoolId" = s.id WHERE e.id = $1`,
        [email.id],
      );
      return r.rows[0]?.archived ? r.rows[0] : null;
    },
    { timeoutMs: 120_000 },
  );

  // The API reads both from the store.
  const api = (path: string) => fetch(`${stack.apiUrl}${path}`, { headers: { authorization: `Bearer ${acct.key}` } });
  const raw = Buffer.from(await (await api(`/api/v1/emails/${email.id}/raw`)).arrayBuffer());
  // Our Received header, then the client's bytes, which size and sha256 describe.
  const { received, client } = splitStored(raw, spool.size);
  expect(received).toMatch(/^Received: from .* id spl_\w+\r\n\tfor <[^>]+>; [^\r\n]+\r\n$/s);
  expect(createHash("sha256").update(client).digest("hex")).toBe(spool.sha256);
  const download = await api(`/api/v1/emails/${email.id}/attachments/0`);
  expect(download.status).toBe(200);
  expect(Buffer.from(await download.arrayBuffer()).equals(content)).toBe(true);

  // GET /emails/{id} keeps the API's own link (it is read with a key anyway).
  const view = await acct.api("GET", `/api/v1/emails/${email.id}`);
  expect(view.body.attachments[0].url).toContain(`/api/v1/emails/${email.id}/attachments/0`);
}, 600_000);
